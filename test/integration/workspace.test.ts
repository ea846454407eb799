import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { basicCredentials, cloneUrlFor, gitAuthEnv } from "../../src/github/git-auth.js";
import { createLogger } from "../../src/log.js";
import {
  maintainWorkspace,
  prepareWorkspace,
  WorkspaceError,
  type PrepareWorkspaceOptions,
  type Workspace,
} from "../../src/runner/workspace.js";
import { startFakeGitHub, type FakeGitHub } from "../helpers/fake-github.js";

let gh: FakeGitHub;
let scratch: string;
let root: string;
let token: string;
let logLines: string[] = [];
const log = createLogger("debug", { write: (line: string) => void logLines.push(line) });
/** Per test: a repository of its own, so tests do not see each other's commits. */
let repo: string;
let repoCount = 0;

const identity = {
  GIT_AUTHOR_NAME: "Agent",
  GIT_AUTHOR_EMAIL: "agent@example.invalid",
  GIT_COMMITTER_NAME: "Agent",
  GIT_COMMITTER_EMAIL: "agent@example.invalid",
};

beforeAll(async () => {
  gh = await startFakeGitHub();
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), "tether-ws-test-"));
  root = path.join(scratch, "workspaces");
  token = gh.createInstallationToken();
});

afterAll(async () => {
  await gh?.close();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

beforeEach(async () => {
  repoCount += 1;
  repo = `octo/widgets-${repoCount}`;
  await gh.addRepo({
    owner: "octo",
    name: `widgets-${repoCount}`,
    files: { "README.md": "# widgets\n", "src/app.ts": "export const v = 1;\n" },
  });
  logLines = [];
});

function options(over: Partial<PrepareWorkspaceOptions> = {}): PrepareWorkspaceOptions {
  const r = over.repo ?? repo;
  return {
    root,
    repo: r,
    issueNumber: 1,
    agent: "tether",
    cloneUrl: cloneUrlFor({ GHE_HOST: gh.host, GHE_PROTOCOL: "http" }, r),
    token,
    log,
    ...over,
  };
}

/** git in the workspace, as the agent would run it (no token anywhere). */
async function agentGit(dir: string, ...args: string[]): Promise<string> {
  const r = await execa("git", args, {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: scratch, GIT_CONFIG_NOSYSTEM: "1", ...identity },
    extendEnv: false,
  });
  return r.stdout.trim();
}

/** The git commands prepareWorkspace started since the log was last cleared ("clone", "fetch" …). */
function gitCommands(): string[] {
  return logLines
    .map((line) => JSON.parse(line) as { msg?: string; git?: string[] })
    .filter((l) => l.msg === "git")
    .map((l) => (l.git ?? []).join(" "));
}

async function read(dir: string, file: string): Promise<string> {
  return fs.readFile(path.join(dir, file), "utf8");
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(path.join(entry.parentPath, entry.name));
  }
  return out;
}

describe("first turn", () => {
  it("clones into <root>/<owner>/<repo>/issue-<n>/<agent> on the default branch", async () => {
    const ws = await prepareWorkspace(options({ issueNumber: 7 }));
    const realRoot = await fs.realpath(root);
    expect(ws.dir).toBe(path.join(realRoot, "octo", `widgets-${repoCount}`, "issue-7", "tether"));
    expect(ws).toMatchObject({ created: true, branch: "main", update: { kind: "cloned" } });
    expect(ws.headSha).toBe(await gh.sha(repo, "main"));
    expect(ws.upstream).toEqual({ ref: "refs/remotes/origin/main", sha: ws.headSha });
    expect(await read(ws.dir, "src/app.ts")).toBe("export const v = 1;\n");
    expect(await agentGit(ws.dir, "remote", "get-url", "origin")).toBe(`${gh.url}/${repo}.git`);
    // No temporary clone is left beside the workspaces.
    expect(await fs.readdir(path.join(realRoot, ".tmp"))).toEqual([]);
  });

  it("checks out a pull request's head as a local branch named after the head ref", async () => {
    const pr = await gh.addPullRequest({
      repo,
      headRef: "feature/login",
      files: { "src/login.ts": "export const login = true;\n" },
    });
    const n = pr.number as number;
    const ws = await prepareWorkspace(
      options({ issueNumber: n, pullRequest: { number: n, headRef: "feature/login" } }),
    );
    expect(ws.created).toBe(true);
    expect(ws.branch).toBe("feature/login");
    expect(ws.headSha).toBe(await gh.sha(repo, "feature/login"));
    expect(ws.upstream.ref).toBe(`refs/pull/${n}/head`);
    expect(await read(ws.dir, "src/login.ts")).toBe("export const login = true;\n");

    // A later push to the PR fast-forwards the local branch.
    const next = await gh.pushToPullRequest(repo, n, { files: { "src/login.ts": "v2\n" } });
    const again = await prepareWorkspace(
      options({
        issueNumber: n,
        pullRequest: { number: n, headRef: "feature/login", headSha: next },
      }),
    );
    expect(again.update).toEqual({ kind: "fast-forwarded", from: ws.headSha, to: next });
    expect(await read(again.dir, "src/login.ts")).toBe("v2\n");
  });

  it("follows a renamed PR head branch by creating it when the tree is clean", async () => {
    const pr = await gh.addPullRequest({ repo, headRef: "old-name" });
    const n = pr.number as number;
    await prepareWorkspace(
      options({ issueNumber: n, pullRequest: { number: n, headRef: "old-name" } }),
    );
    const ws = await prepareWorkspace(
      options({ issueNumber: n, pullRequest: { number: n, headRef: "new-name" } }),
    );
    expect(ws.update).toEqual({ kind: "switched", branch: "new-name" });
    expect(ws.branch).toBe("new-name");
  });
});

describe("later turns", () => {
  it("fast-forwards to a new upstream commit when the tree is clean", async () => {
    const first = await prepareWorkspace(options());
    const sha = await gh.commit(repo, { files: { "src/app.ts": "export const v = 2;\n" } });
    const second = await prepareWorkspace(options());
    expect(second.dir).toBe(first.dir);
    expect(second.created).toBe(false);
    expect(second.update).toEqual({ kind: "fast-forwarded", from: first.headSha, to: sha });
    expect(second.headSha).toBe(sha);
    expect(await read(second.dir, "src/app.ts")).toBe("export const v = 2;\n");

    const third = await prepareWorkspace(options());
    expect(third.update).toEqual({ kind: "up-to-date", ahead: 0 });
  });

  it("keeps an uncommitted change and leaves the checkout when upstream moved", async () => {
    const first = await prepareWorkspace(options());
    await fs.writeFile(path.join(first.dir, "src/app.ts"), "agent's edit\n");
    const sha = await gh.commit(repo, { files: { "README.md": "# upstream edit\n" } });
    const second = await prepareWorkspace(options());
    expect(second.update).toMatchObject({ kind: "left", reason: "uncommitted-changes" });
    expect(await read(second.dir, "src/app.ts")).toBe("agent's edit\n");
    expect(second.headSha).toBe(first.headSha);
    // The fetch still happened: the new commit is there for the agent to merge when ready.
    expect(second.upstream.sha).toBe(sha);
  });

  it("fast-forwards past untracked files and keeps them", async () => {
    const first = await prepareWorkspace(options());
    await fs.writeFile(path.join(first.dir, "notes.md"), "scratch\n");
    const sha = await gh.commit(repo, { files: { "README.md": "# new\n" } });
    const second = await prepareWorkspace(options());
    expect(second.update).toMatchObject({ kind: "fast-forwarded", to: sha });
    expect(await read(second.dir, "notes.md")).toBe("scratch\n");
  });

  it("leaves the checkout when an untracked file is in the update's way", async () => {
    const first = await prepareWorkspace(options());
    await fs.writeFile(path.join(first.dir, "notes.md"), "mine\n");
    await gh.commit(repo, { files: { "notes.md": "theirs\n" } });
    const second = await prepareWorkspace(options());
    expect(second.update).toMatchObject({ kind: "left", reason: "untracked-files-in-the-way" });
    expect(await read(second.dir, "notes.md")).toBe("mine\n");
    expect(second.headSha).toBe(first.headSha);
  });

  it("keeps local commits: diverged history is left, a branch switch is left", async () => {
    const first = await prepareWorkspace(options());
    await fs.writeFile(path.join(first.dir, "local.txt"), "local\n");
    await agentGit(first.dir, "add", "local.txt");
    await agentGit(first.dir, "commit", "-qm", "local work");
    const local = await agentGit(first.dir, "rev-parse", "HEAD");

    const ahead = await prepareWorkspace(options());
    expect(ahead.update).toEqual({ kind: "up-to-date", ahead: 1 });

    await gh.commit(repo, { files: { "README.md": "# upstream\n" } });
    const diverged = await prepareWorkspace(options());
    expect(diverged.update).toMatchObject({ kind: "left", reason: "diverged" });
    expect(diverged.headSha).toBe(local);

    await agentGit(first.dir, "checkout", "-qb", "agent-branch");
    const other = await prepareWorkspace(options());
    expect(other.update).toMatchObject({ kind: "left", reason: "other-branch" });
    expect(other.branch).toBe("agent-branch");
  });

  it("does not run hooks the agent planted in .git/hooks", async () => {
    const first = await prepareWorkspace(options());
    const marker = path.join(scratch, `hook-ran-${repoCount}`);
    for (const hook of ["reference-transaction", "post-merge", "post-checkout"]) {
      const file = path.join(first.dir, ".git", "hooks", hook);
      await fs.writeFile(file, `#!/bin/sh\nenv >> '${marker}'\n`, { mode: 0o755 });
    }
    await gh.commit(repo, { files: { "README.md": "# hooked\n" } });
    const second = await prepareWorkspace(options());
    expect(second.update.kind).toBe("fast-forwarded");
    await expect(fs.stat(marker)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("does not fetch (so sends no token) when the checkout's config could steer it", async () => {
    const first = await prepareWorkspace(options());
    const settings: Array<[string, string]> = [
      ["url.http://127.0.0.1:1/.insteadOf", `${gh.url}/`],
      ["http.proxy", "http://127.0.0.1:1"],
      [`http.${gh.url}/.extraHeader`, "X-Leak: 1"],
      ["core.askPass", "/tmp/steal-token"],
      ["remote.origin.proxy", "http://127.0.0.1:1"],
      ["include.path", "/tmp/other-config"],
      ["credential.helper", "store"],
    ];
    for (const [key, value] of settings) {
      await agentGit(first.dir, "config", key, value);
      const before = gh.requests.length;
      const ws = await prepareWorkspace(options());
      expect(ws.update, key).toMatchObject({ kind: "left", reason: "unsafe-git-config" });
      expect(gh.requests.slice(before).filter((r) => r.kind === "git")).toEqual([]);
      await agentGit(first.dir, "config", "--unset-all", key);
    }
    // Harmless settings an agent may well make do not stop the fetch.
    await agentGit(first.dir, "config", "user.email", "agent@example.invalid");
    await agentGit(first.dir, "config", "pull.rebase", "false");
    expect((await prepareWorkspace(options())).update).toEqual({ kind: "up-to-date", ahead: 0 });
  });
});

describe("the token", () => {
  it("is used for git but lands nowhere under .git, in logs or in the child's argv", async () => {
    const own = gh.createInstallationToken();
    const wrapperLogs = path.join(scratch, `git-wrapper-${repoCount}`);
    await fs.mkdir(wrapperLogs);
    const wrapper = path.join(scratch, `git-wrapper-${repoCount}.sh`);
    // Records every git invocation's argv and environment, each in a file of its own (git runs
    // in parallel, and one shared log would interleave them), then runs the real git.
    await fs.writeFile(
      wrapper,
      `#!/bin/sh\nf=$(mktemp '${wrapperLogs}/call-XXXXXX')\nprintf 'ARGV %s\\n' "$*" > "$f"\nenv | sed 's/^/ENV /' >> "$f"\nexec git "$@"\n`,
      { mode: 0o755 },
    );
    process.env.PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY----- not for git";
    let ws: Workspace;
    try {
      const before = gh.requests.length;
      await prepareWorkspace(options({ token: own, gitPath: wrapper }));
      await gh.commit(repo, { files: { "README.md": "# again\n" } });
      ws = await prepareWorkspace(options({ token: own, gitPath: wrapper }));
      expect(ws.update.kind).toBe("fast-forwarded");
      const gitRequests = gh.requests
        .slice(before)
        .filter((r) => r.kind === "git" && r.status === 200);
      expect(gitRequests.length).toBeGreaterThan(0);
      expect(gitRequests.every((r) => r.token === own)).toBe(true);
    } finally {
      delete process.env.PRIVATE_KEY;
    }

    const forms = [own, basicCredentials(own)];
    for (const file of await filesUnder(path.join(ws.dir, ".git"))) {
      const bytes = await fs.readFile(file);
      for (const form of forms) expect(bytes.includes(form), `${file} holds the token`).toBe(false);
    }
    const config = await read(ws.dir, ".git/config");
    expect(config).not.toMatch(/extraheader|x-access-token/i);
    const logs = logLines.join("");
    expect(logs.length).toBeGreaterThan(0);
    for (const form of forms) expect(logs).not.toContain(form);

    const calls = await fs.readdir(wrapperLogs);
    const recorded = (
      await Promise.all(calls.map((c) => fs.readFile(path.join(wrapperLogs, c), "utf8")))
    ).join("");
    const argv = recorded.split("\n").filter((l) => l.startsWith("ARGV "));
    expect(argv.some((l) => / clone /.test(l))).toBe(true);
    for (const form of forms) expect(argv.join("\n")).not.toContain(form);
    // Only the environment of commands that talk to GitHub carries the header, and no secret
    // of the runner's own reaches git.
    expect(recorded).not.toContain("not for git");
    const blocks = recorded.split("ARGV ").slice(1);
    for (const block of blocks) {
      const talksToGitHub = /^(-c \S+ )*(clone|fetch) /.test(block);
      expect(block.includes(basicCredentials(own)), block.split("\n")[0]).toBe(talksToGitHub);
    }
  });
});

describe("failures", () => {
  it("reports a missing repository in plain words, with no token and nothing left behind", async () => {
    const err = await prepareWorkspace(options({ repo: "octo/missing", issueNumber: 3 })).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkspaceError);
    const we = err as WorkspaceError;
    expect(we.kind).toBe("not-found");
    expect(we.message).toBe(
      "could not clone octo/missing: repository not found or the app has no access",
    );
    for (const text of [we.message, we.detail ?? "", String(we.stack)]) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(basicCredentials(token));
    }
    const realRoot = await fs.realpath(root);
    await expect(fs.stat(path.join(realRoot, "octo", "missing"))).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(await fs.readdir(path.join(realRoot, ".tmp"))).toEqual([]);
  });

  it("reports a refused token as an auth failure", async () => {
    const dead = gh.createInstallationToken();
    gh.revokeToken(dead);
    const err = (await prepareWorkspace(options({ token: dead })).catch(
      (e: unknown) => e,
    )) as WorkspaceError;
    expect(err).toBeInstanceOf(WorkspaceError);
    expect(err.kind).toBe("auth");
    expect(err.message).toMatch(
      /^could not clone octo\/widgets-\d+: GitHub refused the app's installation token/,
    );
    expect(err.message + (err.detail ?? "")).not.toContain(dead);
  });

  it("reports a server error on fetch as unavailable, and a missing PR head as missing-ref", async () => {
    await prepareWorkspace(options());
    gh.failNext({ kind: "git" }, { status: 502 });
    const err = (await prepareWorkspace(options()).catch((e: unknown) => e)) as WorkspaceError;
    expect(err.kind).toBe("unavailable");
    expect(err.message).toMatch(
      /^could not fetch octo\/widgets-\d+: the git server answered with an error/,
    );

    const missing = (await prepareWorkspace(
      options({ issueNumber: 99, pullRequest: { number: 99, headRef: "ghost" } }),
    ).catch((e: unknown) => e)) as WorkspaceError;
    expect(missing.kind).toBe("missing-ref");
    expect(missing.message).toContain("pull request #99's head is not on the server");
  });

  it("stops on cancel and on timeout", async () => {
    const aborted = new AbortController();
    aborted.abort();
    const cancelled = (await prepareWorkspace(options({ signal: aborted.signal })).catch(
      (e: unknown) => e,
    )) as WorkspaceError;
    expect(cancelled.kind).toBe("cancelled");

    const slow = (await prepareWorkspace(options({ issueNumber: 2, timeoutMs: 1 })).catch(
      (e: unknown) => e,
    )) as WorkspaceError;
    expect(slow.kind).toBe("timeout");
    const realRoot = await fs.realpath(root);
    await expect(
      fs.stat(path.join(realRoot, "octo", `widgets-${repoCount}`, "issue-2")),
    ).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses a directory that is there but is not a checkout, and URLs with credentials", async () => {
    const realRoot = await fs.realpath(root);
    const dir = path.join(realRoot, "octo", `widgets-${repoCount}`, "issue-5", "tether");
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, "stray.txt"), "x");
    await expect(prepareWorkspace(options({ issueNumber: 5 }))).rejects.toMatchObject({
      kind: "not-a-checkout",
    });
    await expect(
      prepareWorkspace(
        options({ cloneUrl: `http://x-access-token:${token}@${gh.host}/${repo}.git` }),
      ),
    ).rejects.toMatchObject({ kind: "invalid-key", message: expect.not.stringContaining(token) });
  });
});

describe("file-system failures", () => {
  it("says so when git cannot be started", async () => {
    await expect(
      prepareWorkspace(options({ gitPath: path.join(scratch, "no-such-git") })),
    ).rejects.toMatchObject({
      kind: "git-failed",
      message: expect.stringMatching(/could not start git; is it installed\?$/),
    });
  });

  it("reports an unusable workspace root without its path", async () => {
    const file = path.join(scratch, "not-a-directory");
    await fs.writeFile(file, "x");
    const err = (await prepareWorkspace(options({ root: path.join(file, "ws") })).catch(
      (e: unknown) => e,
    )) as WorkspaceError;
    expect(err).toBeInstanceOf(WorkspaceError);
    expect(err.kind).toBe("filesystem");
    expect(err.message).toMatch(
      /^could not prepare the workspace for octo\/widgets-\d+: .*\(ENOTDIR\)$/,
    );
    expect(err.message).not.toContain(scratch);
  });
});

describe("keys", () => {
  it("gives two keys of one repository two directories, each its own clone", async () => {
    const a = await prepareWorkspace(options({ issueNumber: 1, agent: "tether" }));
    const b = await prepareWorkspace(options({ issueNumber: 1, agent: "reviewer" }));
    const c = await prepareWorkspace(options({ issueNumber: 2, agent: "tether" }));
    expect(new Set([a.dir, b.dir, c.dir]).size).toBe(3);
    await fs.writeFile(path.join(a.dir, "only-in-a.txt"), "a\n");
    await expect(fs.stat(path.join(b.dir, "only-in-a.txt"))).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect([a.created, b.created, c.created]).toEqual([true, true, true]);
  });
});

describe("git processes on the hot path", () => {
  // A regression guard that is not timing-based: each git process costs a turn 5-10 ms.
  it("clone: one process; nothing new: three; a fast-forward: five", async () => {
    logLines = [];
    await prepareWorkspace(options());
    expect(gitCommands()).toEqual(["clone --"]);

    logLines = [];
    expect((await prepareWorkspace(options())).update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(gitCommands().sort()).toEqual(["config -z", "fetch --prune", "status --porcelain=v2"]);

    await gh.commit(repo, { files: { "src/app.ts": "export const v = 3;\n" } });
    logLines = [];
    expect((await prepareWorkspace(options())).update.kind).toBe("fast-forwarded");
    expect(gitCommands().length).toBeLessThanOrEqual(5);
  });

  it("a pull request's first turn: the clone brings its head, then one checkout", async () => {
    const pr = await gh.addPullRequest({ repo, headRef: "feat", files: { "f.txt": "f\n" } });
    const n = pr.number as number;
    const opts = options({ issueNumber: n, pullRequest: { number: n, headRef: "feat" } });
    logLines = [];
    const ws = await prepareWorkspace(opts);
    expect(gitCommands()).toEqual(["clone --no-checkout", "checkout --quiet"]);
    expect(ws.headSha).toBe(await gh.sha(repo, `refs/pull/${n}/head`));
    expect(ws.upstream).toEqual({ ref: `refs/pull/${n}/head`, sha: ws.headSha });
    logLines = [];
    expect((await prepareWorkspace(opts)).update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(gitCommands().length).toBeLessThanOrEqual(3);
  });

  it("reads refs the agent packed (git pack-refs) the same as loose ones", async () => {
    const first = await prepareWorkspace(options());
    await agentGit(first.dir, "pack-refs", "--all");
    await expect(fs.stat(path.join(first.dir, ".git/refs/heads/main"))).rejects.toThrow();
    const same = await prepareWorkspace(options());
    expect(same).toMatchObject({
      headSha: first.headSha,
      branch: "main",
      upstream: first.upstream,
      update: { kind: "up-to-date", ahead: 0 },
    });
    const sha = await gh.commit(repo, { files: { "README.md": "# packed\n" } });
    await agentGit(first.dir, "pack-refs", "--all");
    const moved = await prepareWorkspace(options());
    expect(moved.update).toEqual({ kind: "fast-forwarded", from: first.headSha, to: sha });
    expect(moved.headSha).toBe(sha);
    expect(await agentGit(first.dir, "rev-parse", "HEAD")).toBe(sha);
  });

  it("asks git when a ref file is odd, and fails as before without origin/HEAD", async () => {
    const first = await prepareWorkspace(options());
    const originHead = path.join(first.dir, ".git/refs/remotes/origin/HEAD");
    // Not a form the file reader accepts: git resolves it (to the same branch).
    await fs.writeFile(originHead, "ref:  refs/remotes/origin/main\n");
    logLines = [];
    const ws = await prepareWorkspace(options());
    expect(ws.update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(gitCommands()).toContain("symbolic-ref --quiet");

    await fs.rm(originHead);
    await expect(prepareWorkspace(options())).rejects.toMatchObject({
      kind: "git-failed",
      detail: expect.stringContaining("no origin/HEAD"),
    });
  });

  it("puts origin back when the agent repointed it, and only then", async () => {
    const first = await prepareWorkspace(options());
    await agentGit(first.dir, "remote", "set-url", "origin", "http://127.0.0.1:1/elsewhere.git");
    logLines = [];
    expect((await prepareWorkspace(options())).update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(gitCommands()).toContain("remote set-url");
    expect(await agentGit(first.dir, "remote", "get-url", "origin")).toBe(`${gh.url}/${repo}.git`);
    logLines = [];
    await prepareWorkspace(options());
    expect(gitCommands()).not.toContain("remote set-url");
  });
});

describe("url.*.insteadOf outside the checkout", () => {
  // The runner's own global config (its HOME) is read by every git command Tether starts.
  async function withGlobalConfig<T>(config: string, fn: () => Promise<T>): Promise<T> {
    const home = path.join(scratch, `home-${repoCount}-${Math.random().toString(36).slice(2)}`);
    await fs.mkdir(home);
    await fs.writeFile(path.join(home, ".gitconfig"), config);
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      return await fn();
    } finally {
      process.env.HOME = saved;
    }
  }

  it("refuses to fetch when one rewrites the clone URL elsewhere", async () => {
    await prepareWorkspace(options());
    const before = gh.requests.length;
    const ws = await withGlobalConfig(
      `[url "http://127.0.0.1:1/"]\n\tinsteadOf = ${gh.url}/\n`,
      () => prepareWorkspace(options()),
    );
    expect(ws.update).toMatchObject({
      kind: "left",
      reason: "unsafe-git-config",
      detail: expect.stringContaining("rewrites the clone URL"),
    });
    expect(gh.requests.slice(before).filter((r) => r.kind === "git")).toEqual([]);
  });

  it("fetches when the only rewrites leave the clone URL as it is", async () => {
    await prepareWorkspace(options());
    // Matches, but rewrites to the same URL: git is asked, and says so.
    logLines = [];
    const same = await withGlobalConfig(`[url "${gh.url}/"]\n\tinsteadOf = ${gh.url}/\n`, () =>
      prepareWorkspace(options()),
    );
    expect(same.update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(gitCommands()).toContain("ls-remote --get-url");
    // Does not match: nothing to ask.
    logLines = [];
    const other = await withGlobalConfig(
      `[url "http://127.0.0.1:1/"]\n\tinsteadOf = https://gitlab.example/\n`,
      () => prepareWorkspace(options()),
    );
    expect(other.update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(gitCommands()).not.toContain("ls-remote --get-url");
  });
});

describe("housekeeping", () => {
  async function packs(dir: string): Promise<number> {
    const names = await fs.readdir(path.join(dir, ".git/objects/pack"));
    return names.filter((n) => n.endsWith(".pack")).length;
  }

  it("is not run on the hot path; maintainWorkspace runs it afterwards", async () => {
    const first = await prepareWorkspace(options());
    // Keep every fetched pack, and let two packs be enough for git's automatic gc.
    await agentGit(first.dir, "config", "fetch.unpackLimit", "1");
    await agentGit(first.dir, "config", "gc.autoPackLimit", "1");
    await gh.commit(repo, { files: { "README.md": "# more\n" } });
    logLines = [];
    expect((await prepareWorkspace(options())).update.kind).toBe("fast-forwarded");
    expect(await packs(first.dir)).toBe(2);

    expect(await maintainWorkspace({ root, repo, issueNumber: 1, agent: "tether", log })).toBe(
      "done",
    );
    expect(await packs(first.dir)).toBe(1);
    expect(await agentGit(first.dir, "rev-parse", "HEAD")).toBe(await gh.sha(repo, "main"));
  });

  it("says when there is nothing to maintain or it was cancelled", async () => {
    const key = { root, repo, issueNumber: 404, agent: "tether", log };
    expect(await maintainWorkspace(key)).toBe("no-checkout");
    await prepareWorkspace(options({ issueNumber: 404 }));
    const aborted = new AbortController();
    aborted.abort();
    expect(await maintainWorkspace({ ...key, signal: aborted.signal })).toBe("cancelled");
  });
});

describe("submodules", () => {
  /** Commits a gitlink `lib` (and its .gitmodules) straight into the stand-in's bare repository. */
  async function commitGitlink(bareRepo: string, libUrl: string, libSha: string): Promise<void> {
    const bare = gh.barePath(bareRepo);
    const index = path.join(scratch, `index-${repoCount}-${Math.random().toString(36).slice(2)}`);
    const env = {
      PATH: process.env.PATH,
      HOME: scratch,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_INDEX_FILE: index,
      ...identity,
    };
    const git = async (args: string[], input?: string) =>
      (
        await execa("git", ["--git-dir", bare, ...args], {
          env,
          extendEnv: false,
          ...(input === undefined ? {} : { input }),
        })
      ).stdout.trim();
    const modules = await git(
      ["hash-object", "-w", "--stdin"],
      `[submodule "lib"]\n\tpath = lib\n\turl = ${libUrl}\n`,
    );
    await git(["read-tree", "refs/heads/main"]);
    await git(["update-index", "--add", "--cacheinfo", `100644,${modules},.gitmodules`]);
    await git(["update-index", "--add", "--cacheinfo", `160000,${libSha},lib`]);
    const tree = await git(["write-tree"]);
    const commit = await git(["commit-tree", tree, "-p", "refs/heads/main", "-m", "bump lib"]);
    await git(["update-ref", "refs/heads/main", commit]);
    await fs.rm(index, { force: true });
  }

  it("are never fetched with the token, even when populated and bumped upstream", async () => {
    const libName = `lib-${repoCount}`;
    await gh.addRepo({ owner: "octo", name: libName, files: { "lib.txt": "1\n" } });
    const lib = `octo/${libName}`;
    const libUrl = `${gh.url}/${lib}.git`;
    await commitGitlink(repo, libUrl, (await gh.sha(lib, "main")) as string);
    const first = await prepareWorkspace(options());

    // The agent populates the submodule. (The test clones lib with a token only because the
    // stand-in wants one for every clone; an agent would use a public URL or a copy.)
    await execa("git", ["clone", "-q", libUrl, path.join(first.dir, "lib")], {
      env: { PATH: process.env.PATH, HOME: scratch, ...gitAuthEnv(libUrl, token) },
      extendEnv: false,
    });
    await agentGit(first.dir, "submodule", "init");
    await agentGit(first.dir, "submodule", "absorbgitdirs");

    const next = await gh.commit(lib, { files: { "lib.txt": "2\n" } });
    await commitGitlink(repo, libUrl, next);
    const before = gh.requests.length;
    const ws = await prepareWorkspace(options());
    expect(ws.update.kind).toBe("fast-forwarded");
    const libRequests = gh.requests
      .slice(before)
      .filter((r) => r.kind === "git" && r.path.includes(`/${libName}`));
    expect(libRequests).toEqual([]);
  });
});
