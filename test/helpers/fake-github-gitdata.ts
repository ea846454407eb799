/**
 * The stand-in's Git Data API (POST /repos/{o}/{r}/git/blobs, /trees, /commits, /refs and
 * PATCH /git/refs/{ref}): real git objects written into the repository's bare directory, made
 * as git makes them (`hash-object -w`, a tree built in a scratch index from `base_tree`, and
 * `commit-tree`), so that a following `git fetch` gets the very commit the API answered. A
 * commit made without an author or committer is GitHub's: the app's bot writes it, and it is
 * answered (and later read) as `verification.verified: true`, reason `valid`, as GitHub signs
 * such commits.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";

type Env = Record<string, string>;

const git = (bare: string, env: Env, args: string[], input?: string | Buffer) =>
  execa("git", args, {
    cwd: bare,
    env,
    extendEnv: false,
    reject: false,
    ...(input === undefined ? {} : { input }),
    encoding: "utf8",
  });

/** Whether `sha` names an object of `type` in the repository. */
export async function objectIs(bare: string, env: Env, sha: string, type: string) {
  if (!/^[0-9a-f]{40}$/.test(sha)) return false;
  const r = await git(bare, env, ["cat-file", "-t", sha]);
  return r.exitCode === 0 && r.stdout.trim() === type;
}

export async function writeBlob(bare: string, env: Env, content: Buffer): Promise<string> {
  const r = await execa("git", ["hash-object", "-w", "--stdin"], {
    cwd: bare,
    env,
    extendEnv: false,
    input: content,
  });
  return r.stdout.trim();
}

export interface TreeEntryIn {
  path?: unknown;
  mode?: unknown;
  type?: unknown;
  sha?: unknown;
  content?: unknown;
}

/**
 * A tree: `base` (or empty) with `entries` applied, each a path to set (a blob, a submodule
 * commit) or to delete (`sha: null`). A string is GitHub's 422 message.
 */
export async function writeTree(
  bare: string,
  env: Env,
  base: string | undefined,
  entries: TreeEntryIn[],
): Promise<string | { error: string }> {
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), "fake-gh-index-"));
  const idx = { ...env, GIT_INDEX_FILE: path.join(scratch, "index") };
  try {
    if (base !== undefined) {
      if (!(await objectIs(bare, env, base, "tree"))) return { error: "base_tree is not a tree" };
      await git(bare, idx, ["read-tree", base]);
    } else await git(bare, idx, ["read-tree", "--empty"]);
    const lines: string[] = [];
    for (const e of entries) {
      const p = typeof e.path === "string" ? e.path : "";
      const mode = String(e.mode ?? "");
      if (!p || p.startsWith("/") || p.split("/").some((s) => s === "" || s === "." || s === ".."))
        return { error: `tree.path ${JSON.stringify(e.path)} is invalid` };
      if (!["100644", "100755", "120000", "160000", "040000"].includes(mode))
        return { error: `tree.mode ${JSON.stringify(e.mode)} is invalid` };
      if (e.sha === null) {
        lines.push(`0 ${"0".repeat(40)}\t${p}`);
        continue;
      }
      let sha: string;
      if (typeof e.content === "string") {
        if (e.sha !== undefined) return { error: "Use either tree.sha or content, not both" };
        sha = await writeBlob(bare, env, Buffer.from(e.content, "utf8"));
      } else sha = String(e.sha ?? "");
      const type = mode === "160000" ? "commit" : mode === "040000" ? "tree" : "blob";
      if (type !== "commit" && !(await objectIs(bare, env, sha, type)))
        return { error: `tree.sha ${sha} is not a valid ${type}` };
      if (type === "tree") return { error: "the stand-in takes no tree entries of mode 040000" };
      lines.push(`${mode} ${sha}\t${p}`);
    }
    const u = await git(bare, idx, ["update-index", "--index-info"], lines.join("\n") + "\n");
    if (u.exitCode !== 0) return { error: u.stderr.trim() || "tree could not be made" };
    const w = await git(bare, idx, ["write-tree"]);
    if (w.exitCode !== 0) return { error: w.stderr.trim() || "tree could not be written" };
    return w.stdout.trim();
  } finally {
    await fs.rm(scratch, { recursive: true, force: true });
  }
}

/** The top-level entries of a tree, as POST /git/trees answers them. */
export async function treeEntries(
  bare: string,
  env: Env,
  tree: string,
): Promise<Array<{ path: string; mode: string; type: string; sha: string; size?: number }>> {
  const r = await git(bare, env, ["ls-tree", "-l", "-z", tree]);
  return r.stdout
    .split("\0")
    .filter(Boolean)
    .map((l) => {
      const [meta = "", p = ""] = l.split("\t");
      const [mode = "", type = "", sha = "", size = "-"] = meta.split(/\s+/);
      return { path: p, mode, type, sha, ...(size !== "-" ? { size: Number(size) } : {}) };
    });
}

export interface Person {
  name: string;
  email: string;
  date: Date;
}

export async function writeCommit(
  bare: string,
  env: Env,
  o: { tree: string; parents: string[]; message: string; author: Person; committer: Person },
): Promise<string> {
  const stamp = (d: Date) => `${Math.floor(d.getTime() / 1000)} +0000`;
  const r = await execa(
    "git",
    ["commit-tree", o.tree, ...o.parents.flatMap((p) => ["-p", p]), "-F", "-"],
    {
      cwd: bare,
      env: {
        ...env,
        GIT_AUTHOR_NAME: o.author.name,
        GIT_AUTHOR_EMAIL: o.author.email,
        GIT_AUTHOR_DATE: stamp(o.author.date),
        GIT_COMMITTER_NAME: o.committer.name,
        GIT_COMMITTER_EMAIL: o.committer.email,
        GIT_COMMITTER_DATE: stamp(o.committer.date),
      },
      extendEnv: false,
      input: o.message,
    },
  );
  return r.stdout.trim();
}

/** A commit as the Git Data API reads it back. */
export async function readCommit(
  bare: string,
  env: Env,
  sha: string,
): Promise<
  | {
      tree: string;
      parents: string[];
      message: string;
      author: Person;
      committer: Person;
    }
  | undefined
> {
  if (!(await objectIs(bare, env, sha, "commit"))) return undefined;
  const r = await git(bare, env, [
    "show",
    "-s",
    "--format=%T%x00%P%x00%an%x00%ae%x00%at%x00%cn%x00%ce%x00%ct%x00%B",
    sha,
  ]);
  const [tree = "", parents = "", an = "", ae = "", at = "0", cn = "", ce = "", ct = "0", ...m] =
    r.stdout.split("\0");
  return {
    tree,
    parents: parents.split(" ").filter(Boolean),
    message: m.join("\0"),
    author: { name: an, email: ae, date: new Date(Number(at) * 1000) },
    committer: { name: cn, email: ce, date: new Date(Number(ct) * 1000) },
  };
}

/** Whether `a` is `b` or one of its ancestors. */
export async function isAncestor(bare: string, env: Env, a: string, b: string): Promise<boolean> {
  return (await git(bare, env, ["merge-base", "--is-ancestor", a, b])).exitCode === 0;
}

/** The commits moving a ref from `old` (null: a new ref) to `sha` brings in. */
export async function newCommits(
  bare: string,
  env: Env,
  sha: string,
  old: string | undefined,
): Promise<string[]> {
  const r = await git(bare, env, ["rev-list", sha, ...(old ? [`^${old}`] : ["--not", "--all"])]);
  return r.stdout.split("\n").filter(Boolean);
}
