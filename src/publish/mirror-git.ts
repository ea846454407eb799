/**
 * What publishing does in a repository's mirror, with Tether's own git on the host: take the
 * bundle a sandboxed step made, look at the commits in it, merge when the branch moved, push.
 * The mirror is Tether's (its config, its hooks: none); the objects in the bundle are the
 * agent's and are only ever read as data: fsck'd on the way in, never checked out, never run.
 */
import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { gitFailure, type FailureContext } from "../workspace/errors.js";
import type { HostGit } from "../workspace/git.js";
import { isObjectId } from "../workspace/git-refs.js";

/** One path the change adds, modifies or deletes (`git diff --raw`). */
export interface FileChange {
  path: string;
  /** A added, M modified, D deleted, T type changed. */
  status: string;
  /** The new mode (`100644`, `100755`, `120000` a link, `160000` a submodule); `000000` deleted. */
  mode: string;
  /** Size of the new content in bytes (0 when deleted). */
  bytes: number;
  /** Lines added and removed; null for binary files. */
  added: number | null;
  removed: number | null;
}

export interface CommitInfo {
  parents: string[];
  author: { name: string; email: string };
  committer: { name: string; email: string };
  message: string;
}

export type PushResult =
  | { kind: "pushed" }
  /** The branch moved on GitHub since the mirror last saw it. */
  | { kind: "stale" }
  /** GitHub refused it for another reason (protection, permissions, a ruleset); its words. */
  | { kind: "refused"; message: string };

/** Bundle file headers git writes. */
const BUNDLE_HEADERS = ["# v2 git bundle\n", "# v3 git bundle\n"];

export class MirrorGit {
  constructor(
    private readonly git: HostGit,
    readonly dir: string,
    private readonly ctx: FailureContext,
  ) {}

  private run(
    args: string[],
    o: {
      allowFailure?: boolean;
      input?: string;
      env?: Record<string, string>;
      maxBuffer?: number;
    } = {},
  ) {
    return this.git(args, { cwd: this.dir, step: "fetch", ctx: this.ctx, ...o });
  }

  /**
   * Fetch `srcRef` of the bundle at `file` (written by a sandbox) into `destRef`. The file is
   * opened without following links and copied first: a sandbox could have left a link to
   * another repository where its bundle should be. Returns false when it is not a bundle, or
   * is larger than `maxBytes`.
   */
  async importBundle(
    file: string,
    srcRef: string,
    destRef: string,
    maxBytes: number,
  ): Promise<{ ok: true } | { ok: false; why: "too-large" | "not-a-bundle" }> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    } catch {
      return { ok: false, why: "not-a-bundle" };
    }
    const copy = path.join(
      path.dirname(this.dir),
      `.incoming-${randomBytes(6).toString("hex")}.bundle`,
    );
    try {
      const st = await handle.stat();
      if (!st.isFile()) return { ok: false, why: "not-a-bundle" };
      if (st.size > maxBytes) return { ok: false, why: "too-large" };
      const data = await handle.readFile();
      const head = data.subarray(0, 16).toString("latin1");
      if (!BUNDLE_HEADERS.includes(head)) return { ok: false, why: "not-a-bundle" };
      await fs.writeFile(copy, data, { mode: 0o600 });
      const r = await this.run(
        [
          "-c",
          "transfer.fsckObjects=true",
          "fetch",
          "--quiet",
          "--no-tags",
          "--no-write-fetch-head",
          "--no-recurse-submodules",
          "--",
          copy,
          `+${srcRef}:${destRef}`,
        ],
        { allowFailure: true },
      );
      return r.exitCode === 0 ? { ok: true } : { ok: false, why: "not-a-bundle" };
    } finally {
      await handle.close();
      await fs.rm(copy, { force: true });
    }
  }

  async resolve(ref: string): Promise<string | null> {
    const r = await this.run(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], {
      allowFailure: true,
    });
    const sha = r.stdout.trim();
    return r.exitCode === 0 && isObjectId(sha) ? sha : null;
  }

  async commitInfo(sha: string): Promise<CommitInfo> {
    const r = await this.run(["show", "-s", "--format=%P%x00%an%x00%ae%x00%cn%x00%ce%x00%B", sha]);
    const [parents = "", an = "", ae = "", cn = "", ce = "", ...message] = r.stdout.split("\0");
    return {
      parents: parents.split(" ").filter(Boolean),
      author: { name: an, email: ae },
      committer: { name: cn, email: ce },
      message: message.join("\0"),
    };
  }

  /** Whether `a` is `b` or one of its ancestors. */
  async isAncestor(a: string, b: string): Promise<boolean> {
    const r = await this.run(["merge-base", "--is-ancestor", a, b], { allowFailure: true });
    return r.exitCode === 0;
  }

  /** Every path `from..to` changes, with sizes and line counts. */
  async changes(from: string, to: string): Promise<FileChange[]> {
    const raw = await this.run(["diff", "--raw", "-z", "--no-renames", "--no-abbrev", from, to]);
    const numstat = await this.run(["diff", "--numstat", "-z", "--no-renames", from, to]);
    const counts = new Map<string, { added: number | null; removed: number | null }>();
    const ns = numstat.stdout.split("\0");
    for (let i = 0; i < ns.length; i++) {
      const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(ns[i] ?? "");
      if (!m) continue;
      counts.set(m[3]!, {
        added: m[1] === "-" ? null : Number(m[1]),
        removed: m[2] === "-" ? null : Number(m[2]),
      });
    }
    const fields = raw.stdout.split("\0");
    const out: Array<FileChange & { sha: string }> = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const meta = fields[i]!.replace(/^:/, "").split(" ");
      const p = fields[i + 1]!;
      const [, mode = "", , sha = "", status = ""] = meta;
      const c = counts.get(p) ?? { added: null, removed: null };
      out.push({ path: p, status: status.slice(0, 1), mode, bytes: 0, sha, ...c });
    }
    const blobs = out.filter(
      (f) =>
        f.status !== "D" && /^[0-9a-f]+$/.test(f.sha) && !/^0+$/.test(f.sha) && f.mode !== "160000",
    );
    if (blobs.length) {
      const sizes = await this.run(["cat-file", "--batch-check=%(objectname) %(objectsize)"], {
        input: blobs.map((b) => `${b.sha}\n`).join(""),
      });
      const size = new Map<string, number>();
      for (const line of sizes.stdout.split("\n")) {
        const [sha, n] = line.split(" ");
        if (sha && n && /^\d+$/.test(n)) size.set(sha, Number(n));
      }
      for (const b of blobs) b.bytes = size.get(b.sha) ?? 0;
    }
    return out.map(({ sha: _sha, ...f }) => f);
  }

  /**
   * What `from..to` does to each path, as tree entries: the new mode and object id, or a
   * deletion. For the Git Data API, which takes a tree as changes to a base tree.
   */
  async treeChanges(
    from: string,
    to: string,
  ): Promise<Array<{ path: string; mode: string; sha: string; deleted: boolean }>> {
    const raw = await this.run(["diff", "--raw", "-z", "--no-renames", "--no-abbrev", from, to]);
    const fields = raw.stdout.split("\0");
    const out: Array<{ path: string; mode: string; sha: string; deleted: boolean }> = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const [, mode = "", , sha = "", status = ""] = fields[i]!.replace(/^:/, "").split(" ");
      out.push({ path: fields[i + 1]!, mode, sha, deleted: status.startsWith("D") });
    }
    return out;
  }

  /** Every object id in `commit`'s tree, recursively (blobs and submodule commits). */
  async treeObjects(commit: string): Promise<Set<string>> {
    const r = await this.run(["ls-tree", "-r", "-z", "--format=%(objectname)", commit], {
      maxBuffer: 256 * 1024 * 1024,
    });
    return new Set(r.stdout.split("\0").filter(Boolean));
  }

  /** The tree id of a commit. */
  async treeOf(commit: string): Promise<string> {
    const r = await this.run(["rev-parse", "--verify", `${commit}^{tree}`]);
    return r.stdout.trim();
  }

  /** A blob's bytes. */
  async blob(sha: string): Promise<Buffer> {
    const r = await this.git.bytes(["cat-file", "blob", sha], {
      cwd: this.dir,
      step: "fetch",
      ctx: this.ctx,
      maxBuffer: 128 * 1024 * 1024,
    });
    return r.stdout;
  }

  /**
   * The diff as a patch, cut at `maxBytes`: what the secret scan reads. Every file as text
   * (`--text`): a file the agent made to look binary (one NUL byte) would otherwise show as
   * "Binary files differ" and none of its lines would be scanned.
   */
  async diff(from: string, to: string, maxBytes: number): Promise<{ text: string; cut: boolean }> {
    const r = await this.run([
      "diff",
      "--text",
      "--no-color",
      "--no-ext-diff",
      "--no-textconv",
      "--no-renames",
      from,
      to,
    ]);
    const cut = r.stdout.length > maxBytes;
    return { text: cut ? r.stdout.slice(0, maxBytes) : r.stdout, cut };
  }

  /**
   * What the secret scan reads: the lines `from..to` adds, as a patch without context (`-U0`) and
   * without deleted files, every file as text (see `diff`). A deletion adds nothing, and as
   * removed lines it could fill the budget ahead of a later file's additions (#38). `cut` when the
   * patch is longer than `maxBytes`: then the caller must not take the scan as whole.
   */
  async addedLines(
    from: string,
    to: string,
    maxBytes: number,
  ): Promise<{ text: string; cut: boolean }> {
    const r = await this.run(
      [
        "diff",
        "--text",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--diff-filter=d",
        "--unified=0",
        from,
        to,
      ],
      // One character more than the budget: a longer patch stops git there and reads as cut.
      { allowFailure: true, maxBuffer: maxBytes + 1 },
    );
    const cut = r.stdout.length > maxBytes;
    if (r.exitCode !== 0 && !cut)
      throw gitFailure(this.ctx, "read", r.stderr, "git-failed", r.exitCode);
    return { text: cut ? r.stdout.slice(0, maxBytes) : r.stdout, cut };
  }

  /** Three-way merge of `theirs` into `ours` without a checkout: the tree, or null on a conflict. */
  async mergeTree(ours: string, theirs: string): Promise<string | null> {
    const r = await this.run(["merge-tree", "--write-tree", "--no-messages", ours, theirs], {
      allowFailure: true,
    });
    const tree = r.stdout.split("\n")[0]?.trim() ?? "";
    return r.exitCode === 0 && isObjectId(tree) ? tree : null;
  }

  async commitTree(
    tree: string,
    parents: string[],
    message: string,
    who: { name: string; email: string },
  ): Promise<string> {
    const r = await this.run(
      [
        "-c",
        "commit.gpgSign=false",
        "commit-tree",
        tree,
        ...parents.flatMap((p) => ["-p", p]),
        "-F",
        "-",
      ],
      {
        input: message,
        env: {
          GIT_AUTHOR_NAME: who.name,
          GIT_AUTHOR_EMAIL: who.email,
          GIT_COMMITTER_NAME: who.name,
          GIT_COMMITTER_EMAIL: who.email,
        },
      },
    );
    const sha = r.stdout.trim();
    if (!isObjectId(sha)) throw new Error(`git commit-tree gave no commit: ${sha.slice(0, 80)}`);
    return sha;
  }

  /** Commits in `from..to`, newest first: short id, author, subject. */
  async log(
    from: string,
    to: string,
    max = 20,
  ): Promise<Array<{ sha: string; author: string; subject: string }>> {
    const r = await this.run(
      ["log", `--max-count=${max}`, "--format=%h%x00%an%x00%s", `${from}..${to}`],
      {
        allowFailure: true,
      },
    );
    if (r.exitCode !== 0) return [];
    return r.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => {
        const [sha = "", author = "", subject = ""] = l.split("\0");
        return { sha, author, subject };
      });
  }

  async setRef(ref: string, sha: string): Promise<void> {
    await this.run(["update-ref", ref, sha]);
  }

  async deleteRef(ref: string): Promise<void> {
    await this.run(["update-ref", "-d", ref], { allowFailure: true });
  }

  /**
   * Push `sha` to `branch` on GitHub: never forced, so GitHub takes it only as a fast-forward
   * (or a new branch). The token goes in git's environment, scoped to the clone URL's host.
   */
  async push(cloneUrl: string, token: string, sha: string, branch: string): Promise<PushResult> {
    const r = await this.git(
      ["push", "--porcelain", "--no-verify", "--", cloneUrl, `${sha}:refs/heads/${branch}`],
      {
        cwd: this.dir,
        step: "fetch",
        ctx: this.ctx,
        auth: { cloneUrl, token },
        allowFailure: true,
      },
    );
    if (r.exitCode === 0) return { kind: "pushed" };
    const all = `${r.stdout}\n${r.stderr}`;
    if (/\t\[rejected\] \((fetch first|non-fast-forward|stale info)\)/i.test(all))
      return { kind: "stale" };
    const remote = all
      .split("\n")
      .filter((l) => /^remote: |^error: |^!/.test(l))
      .map((l) => l.replace(/^remote:\s*/, "").trim())
      .filter(Boolean)
      .join(" ");
    return { kind: "refused", message: (remote || all.trim()).slice(0, 600) };
  }
}
