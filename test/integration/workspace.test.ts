/**
 * The workspace for real: the GitHub stand-in over HTTP and git, Tether's mirror on the host,
 * and every git command in the checkout inside the real bubblewrap sandbox. Also the drills
 * against the checkout: a `.git/config` that makes git run programs, a `.git` that points at
 * another key's repository, a runner whose own ~/.gitconfig would steer the token.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { basicCredentials, cloneUrlFor, gitAuthEnv } from "../../src/github/git-auth.js";
import { createLogger } from "../../src/log.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";
import {
  WorkspaceError,
  Workspaces,
  type PrepareRequest,
  type Workspace,
} from "../../src/workspace/workspace.js";
import { startFakeGitHub, type FakeGitHub } from "../helpers/fake-github.js";
import { repoIdOf } from "../helpers/seed.js";

let gh: FakeGitHub;
let scratch: string;
let root: string;
let token: string;
let logLines: string[] = [];
const log = createLogger("debug", { write: (line: string) => void logLines.push(line) });
let sandbox: Sandbox;
let ws: Workspaces;
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
  sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(scratch, "sandbox"), log });
  expect(sandbox.status).toMatchObject({ ok: true });
  ws = await Workspaces.open({ root, sandbox, log, gitHome: path.join(scratch, "git-home") });
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

function request(over: Partial<PrepareRequest> = {}): PrepareRequest {
  const r = over.repo ?? repo;
  return {
    repoId: repoIdOf(r),
    repo: r,
    issueNumber: 1,
    agent: "tether",
    cloneUrl: cloneUrlFor({ GHE_HOST: gh.host, GHE_PROTOCOL: "http" }, r),
    token,
    ...over,
  };
}

const prepare = (over: Partial<PrepareRequest> = {}, on: Workspaces = ws) =>
  on.prepare(request(over));

/** git in the workspace, as the agent would run it (no token anywhere). */
async function agentGit(dir: string, ...args: string[]): Promise<string> {
  const r = await execa("git", args, {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: scratch, GIT_CONFIG_NOSYSTEM: "1", ...identity },
    extendEnv: false,
  });
  return r.stdout.trim();
}

/** What ran since the log was last cleared: host git in the mirror, and sandboxes in the checkout. */
function steps(): { host: string[]; sandboxed: string[] } {
  const lines = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    host: lines.filter((l) => l.msg === "git").map((l) => (l.git as string[]).join(" ")),
    sandboxed: lines
      .filter((l) => l.msg === "git in the workspace")
      .map((l) => `${String(l.step)}${l.sandboxed ? "" : " (unsandboxed)"}`),
  };
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
  it("clones from the mirror into <root>/_repos/<repository id>/issue-<n>/<agent> on the default branch", async () => {
    const w = await prepare({ issueNumber: 7 });
    const realRoot = await fs.realpath(root);
    expect(w.dir).toBe(path.join(realRoot, "_repos", String(repoIdOf(repo)), "issue-7", "tether"));
    expect(w).toMatchObject({
      created: true,
      branch: "main",
      defaultBranch: "main",
      update: { kind: "cloned" },
    });
    expect(w.origin).toBe(path.join(realRoot, ".mirrors", `${repoIdOf(repo)}.git`));
    expect(w.headSha).toBe(await gh.sha(repo, "main"));
    expect(w.upstream).toEqual({ ref: "refs/remotes/origin/main", sha: w.headSha });
    expect(await read(w.dir, "src/app.ts")).toBe("export const v = 1;\n");
    // The agent's origin is the mirror as the sandbox sees it: read-only, no token, no network.
    expect(await agentGit(w.dir, "remote", "get-url", "origin")).toBe("/run/tether/origin.git");
    // The mirror is bare and Tether's: GitHub's branches, GitHub as its only remote.
    expect(await agentGit(w.origin, "rev-parse", "--is-bare-repository")).toBe("true");
    expect(await fs.readdir(path.join(realRoot, ".tmp"))).toEqual([]);
  });

  it("checks out a pull request's head as a local branch named after the head ref", async () => {
    const pr = await gh.addPullRequest({
      repo,
      headRef: "feature/login",
      files: { "src/login.ts": "export const login = true;\n" },
    });
    const n = pr.number as number;
    const w = await prepare({
      issueNumber: n,
      pullRequest: { number: n, headRef: "feature/login" },
    });
    expect(w.created).toBe(true);
    expect(w.branch).toBe("feature/login");
    expect(w.headSha).toBe(await gh.sha(repo, "feature/login"));
    expect(w.upstream.ref).toBe(`refs/pull/${n}/head`);
    expect(await read(w.dir, "src/login.ts")).toBe("export const login = true;\n");

    // A later push to the PR fast-forwards the local branch.
    const next = await gh.pushToPullRequest(repo, n, { files: { "src/login.ts": "v2\n" } });
    const again = await prepare({
      issueNumber: n,
      pullRequest: { number: n, headRef: "feature/login", headSha: next },
    });
    expect(again.update).toEqual({ kind: "fast-forwarded", from: w.headSha, to: next });
    expect(await read(again.dir, "src/login.ts")).toBe("v2\n");
  });

  it("follows a renamed PR head branch by creating it when the tree is clean", async () => {
    const pr = await gh.addPullRequest({ repo, headRef: "old-name" });
    const n = pr.number as number;
    await prepare({ issueNumber: n, pullRequest: { number: n, headRef: "old-name" } });
    const w = await prepare({ issueNumber: n, pullRequest: { number: n, headRef: "new-name" } });
    expect(w.update).toEqual({ kind: "switched", branch: "new-name" });
    expect(w.branch).toBe("new-name");
  });
});

describe("later turns", () => {
  it("fast-forwards to a new upstream commit when the tree is clean", async () => {
    const first = await prepare();
    const sha = await gh.commit(repo, { files: { "src/app.ts": "export const v = 2;\n" } });
    const second = await prepare();
    expect(second.dir).toBe(first.dir);
    expect(second.created).toBe(false);
    expect(second.update).toEqual({ kind: "fast-forwarded", from: first.headSha, to: sha });
    expect(second.headSha).toBe(sha);
    expect(await read(second.dir, "src/app.ts")).toBe("export const v = 2;\n");
    expect((await prepare()).update).toEqual({ kind: "up-to-date", ahead: 0 });
  });

  it("keeps an uncommitted change and leaves the checkout when upstream moved", async () => {
    const first = await prepare();
    await fs.writeFile(path.join(first.dir, "src/app.ts"), "agent's edit\n");
    const sha = await gh.commit(repo, { files: { "README.md": "# upstream edit\n" } });
    const second = await prepare();
    expect(second.update).toMatchObject({ kind: "left", reason: "uncommitted-changes" });
    expect(await read(second.dir, "src/app.ts")).toBe("agent's edit\n");
    expect(second.headSha).toBe(first.headSha);
    // The fetch still happened: the new commit is there for the agent to merge when ready.
    expect(second.upstream.sha).toBe(sha);
  });

  it("fast-forwards past untracked files and keeps them", async () => {
    const first = await prepare();
    await fs.writeFile(path.join(first.dir, "notes.md"), "scratch\n");
    const sha = await gh.commit(repo, { files: { "README.md": "# new\n" } });
    const second = await prepare();
    expect(second.update).toMatchObject({ kind: "fast-forwarded", to: sha });
    expect(await read(second.dir, "notes.md")).toBe("scratch\n");
  });

  it("leaves the checkout when an untracked file is in the update's way", async () => {
    const first = await prepare();
    await fs.writeFile(path.join(first.dir, "notes.md"), "mine\n");
    await gh.commit(repo, { files: { "notes.md": "theirs\n" } });
    const second = await prepare();
    expect(second.update).toMatchObject({ kind: "left", reason: "untracked-files-in-the-way" });
    expect(await read(second.dir, "notes.md")).toBe("mine\n");
    expect(second.headSha).toBe(first.headSha);
  });

  it("keeps local commits: diverged history is left, a branch switch is left", async () => {
    const first = await prepare();
    await fs.writeFile(path.join(first.dir, "local.txt"), "local\n");
    await agentGit(first.dir, "add", "local.txt");
    await agentGit(first.dir, "commit", "-qm", "local work");
    const local = await agentGit(first.dir, "rev-parse", "HEAD");

    expect((await prepare()).update).toEqual({ kind: "up-to-date", ahead: 1 });

    await gh.commit(repo, { files: { "README.md": "# upstream\n" } });
    const diverged = await prepare();
    expect(diverged.update).toMatchObject({ kind: "left", reason: "diverged" });
    expect(diverged.headSha).toBe(local);

    await agentGit(first.dir, "checkout", "-qb", "agent-branch");
    const other = await prepare();
    expect(other.update).toMatchObject({ kind: "left", reason: "other-branch" });
    expect(other.branch).toBe("agent-branch");
  });

  it("reads refs the agent packed (git pack-refs) the same as loose ones", async () => {
    const first = await prepare();
    await agentGit(first.dir, "pack-refs", "--all");
    const same = await prepare();
    expect(same).toMatchObject({
      headSha: first.headSha,
      branch: "main",
      update: { kind: "up-to-date" },
    });
    const sha = await gh.commit(repo, { files: { "README.md": "# packed\n" } });
    await agentGit(first.dir, "pack-refs", "--all");
    const moved = await prepare();
    expect(moved.update).toEqual({ kind: "fast-forwarded", from: first.headSha, to: sha });
    expect(await agentGit(first.dir, "rev-parse", "HEAD")).toBe(sha);
  });

  it("puts origin back on the mirror when the agent repointed it", async () => {
    const first = await prepare();
    await agentGit(first.dir, "remote", "set-url", "origin", "http://127.0.0.1:1/elsewhere.git");
    expect((await prepare()).update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(await agentGit(first.dir, "remote", "get-url", "origin")).toBe("/run/tether/origin.git");
  });
});

describe("what the checkout can make git do stays in the sandbox", () => {
  it("hooks the agent planted in .git/hooks do not run", async () => {
    const first = await prepare();
    const marker = path.join(scratch, `hook-ran-${repoCount}`);
    for (const hook of ["reference-transaction", "post-merge", "post-checkout"]) {
      const file = path.join(first.dir, ".git", "hooks", hook);
      await fs.writeFile(file, `#!/bin/sh\nenv >> '${marker}'\n`, { mode: 0o755 });
    }
    await gh.commit(repo, { files: { "README.md": "# hooked\n" } });
    expect((await prepare()).update.kind).toBe("fast-forwarded");
    await expect(fs.stat(marker)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("a clean/smudge filter or an fsmonitor in .git/config reaches nothing outside", async () => {
    const first = await prepare();
    const marker = path.join(scratch, `filter-ran-${repoCount}`);
    // What the filter would do on the host: write next to the test's files, and read the
    // runner's environment. In the sandbox neither path exists.
    const evil = `sh -c 'echo ran > ${marker}; cat /proc/${process.pid}/environ >> ${marker}; cat'`;
    await agentGit(first.dir, "config", "filter.evil.clean", evil);
    await agentGit(first.dir, "config", "filter.evil.smudge", evil);
    await agentGit(first.dir, "config", "core.fsmonitor", `${evil} #`);
    await fs.writeFile(path.join(first.dir, ".gitattributes"), "* filter=evil\n");
    // Make every file stat-dirty, so status runs the clean filter on it.
    for (const f of ["README.md", "src/app.ts"]) {
      const p = path.join(first.dir, f);
      await fs.utimes(p, new Date(), new Date(Date.now() + 5000));
    }
    await gh.commit(repo, { files: { "README.md": "# filtered\n" } });
    const w = await prepare();
    expect(["fast-forwarded", "left"]).toContain(w.update.kind);
    await expect(fs.stat(marker)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("a .git that points at another key's repository moves nothing of that key", async () => {
    const victim = await prepare({ issueNumber: 2 });
    const victimHead = await agentGit(victim.dir, "rev-parse", "HEAD");
    await fs.writeFile(path.join(victim.dir, "src/app.ts"), "victim's work\n");
    const attacker = await prepare({ issueNumber: 3 });
    await fs.rm(path.join(attacker.dir, ".git"), { recursive: true });
    await fs.symlink(path.join(victim.dir, ".git"), path.join(attacker.dir, ".git"));
    await gh.commit(repo, { files: { "README.md": "# moved on\n" } });
    // Inside the sandbox the link leads nowhere: not a checkout, and the victim is untouched.
    await expect(prepare({ issueNumber: 3 })).rejects.toMatchObject({ kind: "not-a-checkout" });
    expect(await agentGit(victim.dir, "rev-parse", "HEAD")).toBe(victimHead);
    expect(await read(victim.dir, "src/app.ts")).toBe("victim's work\n");
  });

  it("the runner's own ~/.gitconfig does not steer the mirror's fetch or its token", async () => {
    await prepare();
    const home = path.join(scratch, `home-${repoCount}`);
    await fs.mkdir(home);
    // A proxy that would receive the token, and a rewrite of GitHub's URL to an attacker.
    await fs.writeFile(
      path.join(home, ".gitconfig"),
      `[http]\n\tproxy = http://127.0.0.1:1\n[url "http://127.0.0.1:1/"]\n\tinsteadOf = ${gh.url}/\n`,
    );
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      const sha = await gh.commit(repo, { files: { "README.md": "# still fetched\n" } });
      const other = await Workspaces.open({ root, sandbox, log });
      expect((await prepare({}, other)).update).toMatchObject({ kind: "fast-forwarded", to: sha });
    } finally {
      process.env.HOME = saved;
    }
  });
});

describe("the token", () => {
  it("reaches only the mirror's fetch, by environment: nothing under either .git, no log, no argv", async () => {
    const own = gh.createInstallationToken();
    const wrapperLogs = path.join(scratch, `git-wrapper-${repoCount}`);
    await fs.mkdir(wrapperLogs);
    const wrapper = path.join(scratch, `git-wrapper-${repoCount}.sh`);
    // Records every host git invocation's argv and environment, each in a file of its own,
    // then runs the real git.
    await fs.writeFile(
      wrapper,
      `#!/bin/sh\nf=$(mktemp '${wrapperLogs}/call-XXXXXX')\nprintf 'ARGV %s\\n' "$*" > "$f"\nenv | sed 's/^/ENV /' >> "$f"\nexec git "$@"\n`,
      { mode: 0o755 },
    );
    const wrapped = await Workspaces.open({
      root: path.join(scratch, `wrapped-${repoCount}`),
      sandbox,
      log,
      gitPath: wrapper,
    });
    process.env.PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY----- not for git";
    let w: Workspace;
    try {
      const before = gh.requests.length;
      await wrapped.prepare(request({ token: own }));
      await gh.commit(repo, { files: { "README.md": "# again\n" } });
      w = await wrapped.prepare(request({ token: own }));
      expect(w.update.kind).toBe("fast-forwarded");
      const gitRequests = gh.requests
        .slice(before)
        .filter((r) => r.kind === "git" && r.status === 200);
      expect(gitRequests.length).toBeGreaterThan(0);
      expect(gitRequests.every((r) => r.token === own)).toBe(true);
    } finally {
      delete process.env.PRIVATE_KEY;
    }
    const forms = [own, basicCredentials(own)];
    for (const dir of [path.join(w.dir, ".git"), w.origin]) {
      for (const file of await filesUnder(dir)) {
        const bytes = await fs.readFile(file);
        for (const form of forms)
          expect(bytes.includes(form), `${file} holds the token`).toBe(false);
      }
    }
    const logs = logLines.join("");
    for (const form of forms) expect(logs).not.toContain(form);
    const recorded = (
      await Promise.all(
        (await fs.readdir(wrapperLogs)).map((c) => fs.readFile(path.join(wrapperLogs, c), "utf8")),
      )
    ).join("");
    const blocks = recorded.split("ARGV ").slice(1);
    expect(blocks.some((b) => / clone /.test(b.split("\n")[0]!))).toBe(true);
    for (const block of blocks) {
      const argv = block.split("\n")[0]!;
      for (const form of forms) expect(argv).not.toContain(form);
      // Only commands that talk to GitHub carry the header; none gets the runner's secrets,
      // and each reads no config but the repository's own.
      expect(block.includes(basicCredentials(own)), argv).toBe(
        / (clone|fetch|ls-remote) /.test(` ${argv}`),
      );
      expect(block).toContain("ENV GIT_CONFIG_NOSYSTEM=1");
      expect(block).toContain("ENV GIT_CONFIG_GLOBAL=/dev/null");
      expect(block).not.toContain("not for git");
    }
  });
});

describe("failures", () => {
  it("reports a missing repository in plain words, with no token and nothing left behind", async () => {
    const err = (await prepare({
      repoId: repoIdOf("octo/missing"),
      repo: "octo/missing",
      issueNumber: 3,
    }).catch((e: unknown) => e)) as WorkspaceError;
    expect(err).toBeInstanceOf(WorkspaceError);
    expect(err.kind).toBe("not-found");
    expect(err.message).toBe(
      "could not clone octo/missing: repository not found or the app has no access",
    );
    for (const text of [err.message, err.detail ?? "", String(err.stack)]) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(basicCredentials(token));
    }
    const realRoot = await fs.realpath(root);
    await expect(fs.stat(path.join(realRoot, "octo", "missing"))).rejects.toMatchObject({
      code: "ENOENT",
    });
    await expect(
      fs.stat(path.join(realRoot, ".mirrors", "octo", "missing.git")),
    ).rejects.toMatchObject({
      code: "ENOENT",
    });
  });

  it("reports a refused token as an auth failure", async () => {
    const dead = gh.createInstallationToken();
    gh.revokeToken(dead);
    const err = (await prepare({ token: dead }).catch((e: unknown) => e)) as WorkspaceError;
    expect(err.kind).toBe("auth");
    expect(err.message).toMatch(
      /^could not clone octo\/widgets-\d+: GitHub refused the app's installation token/,
    );
    expect(err.message + (err.detail ?? "")).not.toContain(dead);
  });

  it("reports a server error on fetch as unavailable, and a missing PR head as missing-ref", async () => {
    await prepare();
    gh.failNext({ kind: "git" }, { status: 502 });
    const err = (await prepare().catch((e: unknown) => e)) as WorkspaceError;
    expect(err.kind).toBe("unavailable");
    expect(err.message).toMatch(
      /^could not fetch octo\/widgets-\d+: the git server answered with an error/,
    );

    const missing = (await prepare({
      issueNumber: 99,
      pullRequest: { number: 99, headRef: "ghost" },
    }).catch((e: unknown) => e)) as WorkspaceError;
    expect(missing.kind).toBe("missing-ref");
    expect(missing.message).toContain("pull request #99's head is not on the server");
  });

  it("stops on cancel", async () => {
    const aborted = new AbortController();
    aborted.abort();
    const cancelled = (await prepare({ signal: aborted.signal }).catch(
      (e: unknown) => e,
    )) as WorkspaceError;
    expect(cancelled.kind).toBe("cancelled");
    const realRoot = await fs.realpath(root);
    await expect(
      fs.stat(path.join(realRoot, "_repos", String(repoIdOf(repo)), "issue-1")),
    ).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses a directory that is there but is not a checkout, and URLs with credentials", async () => {
    const realRoot = await fs.realpath(root);
    const dir = path.join(realRoot, "_repos", String(repoIdOf(repo)), "issue-5", "tether");
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, "stray.txt"), "x");
    await expect(prepare({ issueNumber: 5 })).rejects.toMatchObject({ kind: "not-a-checkout" });
    await expect(
      prepare({ cloneUrl: `http://x-access-token:${token}@${gh.host}/${repo}.git` }),
    ).rejects.toMatchObject({ kind: "invalid-key", message: expect.not.stringContaining(token) });
  });

  it("says so when git cannot be started", async () => {
    const broken = await Workspaces.open({
      root: path.join(scratch, `broken-${repoCount}`),
      sandbox,
      log,
      gitPath: path.join(scratch, "no-such-git"),
    });
    await expect(broken.prepare(request())).rejects.toMatchObject({
      kind: "git-failed",
      message: expect.stringMatching(/could not start git; is it installed\?$/),
    });
  });
});

describe("keys", () => {
  it("gives two keys of one repository two directories and one mirror", async () => {
    const a = await prepare({ issueNumber: 1, agent: "tether" });
    const b = await prepare({ issueNumber: 1, agent: "reviewer" });
    const c = await prepare({ issueNumber: 2, agent: "tether" });
    expect(new Set([a.dir, b.dir, c.dir]).size).toBe(3);
    expect(new Set([a.origin, b.origin, c.origin]).size).toBe(1);
    await fs.writeFile(path.join(a.dir, "only-in-a.txt"), "a\n");
    await expect(fs.stat(path.join(b.dir, "only-in-a.txt"))).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect([a.created, b.created, c.created]).toEqual([true, true, true]);
  });
});

describe("steps on the hot path", () => {
  // A regression guard that is not timing-based: each sandbox costs a turn ~15 ms, each git
  // process 5-10 ms.
  it("clone: one network clone, one sandbox; nothing new: one fetch, one sandbox; a fast-forward: three", async () => {
    logLines = [];
    await prepare();
    expect(steps()).toEqual({
      host: [expect.stringMatching(/^clone --bare/)],
      sandboxed: [expect.any(String)],
    });

    logLines = [];
    expect((await prepare()).update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(steps().host).toEqual([expect.stringMatching(/^fetch --quiet/)]);
    expect(steps().sandboxed).toHaveLength(1);

    await gh.commit(repo, { files: { "src/app.ts": "export const v = 3;\n" } });
    logLines = [];
    expect((await prepare()).update.kind).toBe("fast-forwarded");
    expect(steps().host).toEqual([expect.stringMatching(/^fetch --quiet/)]);
    expect(steps().sandboxed).toHaveLength(3);
  });
});

describe("a later turn whose branches GitHub says are as the mirror has them (serverHead)", () => {
  /** GitHub's answer for a branch, read off the stand-in's repository, and who asked what. */
  function server(fail = false) {
    const asked: string[] = [];
    const serverHead = async (branch: string) => {
      asked.push(branch);
      if (fail) throw new Error("HttpError: Service Unavailable");
      return (await gh.sha(repo, branch)) ?? null;
    };
    return { asked, serverHead };
  }
  const fetches = () => steps().host.filter((g) => g.startsWith("fetch "));

  it("skips the mirror's fetch while nothing moved, fetches once a branch the turn stands on did", async () => {
    const branch = "tether/1-tether";
    await prepare({ follow: branch });
    const s = server();

    logLines = [];
    const quiet = await prepare({ follow: branch, serverHead: s.serverHead });
    expect(quiet.update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(fetches()).toEqual([]);
    expect(s.asked.sort()).toEqual(["main", branch]);
    expect(logLines.join("\n")).toContain("fetch skipped");

    // A branch the turn does not stand on: not fetched while the turn's own are unchanged
    // (the mirror's other branches are at most mirrorFreshMs old).
    const other = await gh.commit(repo, { branch: "other", files: { "x.txt": "x\n" } });
    logLines = [];
    await prepare({ follow: branch, serverHead: s.serverHead });
    expect(fetches()).toEqual([]);
    expect(await agentGit(ws.mirrorFor(repoIdOf(repo)), "branch", "--list", "other")).toBe("");

    // The default branch moved: fetched, fast-forwarded, and the other branch came along.
    const tip = await gh.commit(repo, { files: { "src/app.ts": "export const v = 4;\n" } });
    logLines = [];
    const moved = await prepare({ follow: branch, serverHead: s.serverHead });
    expect(fetches()).toHaveLength(1);
    expect(moved.update).toMatchObject({ kind: "fast-forwarded", to: tip });
    expect(await agentGit(ws.mirrorFor(repoIdOf(repo)), "rev-parse", "other")).toBe(other);

    // The conversation branch appeared on GitHub: fetched and switched to.
    const conv = await gh.commit(repo, { branch, files: { "NOTES.md": "hi\n" } });
    logLines = [];
    const switched = await prepare({ follow: branch, serverHead: s.serverHead });
    expect(fetches()).toHaveLength(1);
    expect(switched.update).toEqual({ kind: "switched", branch });
    expect(switched.upstream.sha).toBe(conv);

    // And it is followed, unfetched, while it stays where it is.
    logLines = [];
    expect((await prepare({ follow: branch, serverHead: s.serverHead })).headSha).toBe(conv);
    expect(fetches()).toEqual([]);
  });

  it("a pull request: skipped while its head and base are unchanged; fetched when the head moved or is not known", async () => {
    const pr = await gh.addPullRequest({ repo, headRef: "feature/x", files: { "a.ts": "1\n" } });
    const n = pr.number as number;
    const s = server();
    const turn = async (headSha?: string) =>
      prepare({
        issueNumber: n,
        pullRequest: {
          number: n,
          headRef: "feature/x",
          baseRef: "main",
          ...(headSha ? { headSha } : {}),
        },
        serverHead: s.serverHead,
      });
    const first = await turn();
    logLines = [];
    expect((await turn(first.headSha)).update).toEqual({ kind: "up-to-date", ahead: 0 });
    expect(fetches()).toEqual([]);
    expect(s.asked).toEqual(["main"]); // the base is the default branch: asked once

    const next = await gh.pushToPullRequest(repo, n, { files: { "a.ts": "2\n" } });
    logLines = [];
    // The turn's head commit as GitHub gave it: the mirror lacks it, so it fetches.
    expect((await turn(next)).update).toEqual({
      kind: "fast-forwarded",
      from: first.headSha,
      to: next,
    });
    expect(fetches()).toHaveLength(1);

    logLines = [];
    await turn(); // no head commit to compare: fetch
    expect(fetches()).toHaveLength(1);

    await gh.commit(repo, { files: { "base.txt": "b\n" } });
    logLines = [];
    await turn(next); // the base moved (its agent-control files are read from the mirror)
    expect(fetches()).toHaveLength(1);
  });

  it("fetches when GitHub does not answer, and when the mirror was not fetched whole lately", async () => {
    await prepare();
    const down = server(true);
    logLines = [];
    expect((await prepare({ serverHead: down.serverHead })).update.kind).toBe("up-to-date");
    expect(fetches()).toHaveLength(1);
    expect(down.asked).toEqual(["main"]);

    const strict = await Workspaces.open({
      root,
      sandbox,
      log,
      gitHome: path.join(scratch, "git-home"),
      mirrorFreshMs: 0,
    });
    const s = server();
    logLines = [];
    await prepare({ serverHead: s.serverHead }, strict);
    expect(fetches()).toHaveLength(1);
    expect(s.asked).toEqual([]); // nothing to skip on, so GitHub is not asked
  });

  it("a fresh process fetches its first turn of a repository, however the branches stand", async () => {
    await prepare();
    const other = await Workspaces.open({
      root,
      sandbox,
      log,
      gitHome: path.join(scratch, "git-home"),
    });
    const s = server();
    logLines = [];
    await prepare({ serverHead: s.serverHead }, other);
    expect(fetches()).toHaveLength(1);
    logLines = [];
    await prepare({ serverHead: s.serverHead }, other);
    expect(fetches()).toEqual([]);
  });
});

describe("with the sandbox off (TETHER_SANDBOX=off)", () => {
  it("works the same, unsandboxed, and never finds a repository above the workspace", async () => {
    const off = await Sandbox.start({ mode: "off", stateDir: path.join(scratch, "off"), log });
    const plain = await Workspaces.open({
      root: path.join(scratch, `off-${repoCount}`),
      sandbox: off,
      log,
    });
    logLines = [];
    const first = await plain.prepare(request());
    expect(first.update.kind).toBe("cloned");
    expect(steps().sandboxed.every((s) => s.endsWith("(unsandboxed)"))).toBe(true);
    expect(await agentGit(first.dir, "remote", "get-url", "origin")).toBe(first.origin);
    const sha = await gh.commit(repo, { files: { "README.md": "# off\n" } });
    expect((await plain.prepare(request())).update).toMatchObject({
      kind: "fast-forwarded",
      to: sha,
    });
    // A workspace that lost its .git is not a checkout, even inside another repository.
    await execa("git", ["init", "-q", path.join(scratch, `off-${repoCount}`)]);
    await fs.rm(path.join(first.dir, ".git"), { recursive: true });
    await expect(plain.prepare(request())).rejects.toMatchObject({ kind: "not-a-checkout" });
  });
});

describe("housekeeping", () => {
  async function packs(dir: string): Promise<number> {
    const names = await fs.readdir(path.join(dir, ".git/objects/pack"));
    return names.filter((n) => n.endsWith(".pack")).length;
  }

  it("is not run on the hot path; maintain runs it afterwards, in the sandbox", async () => {
    const first = await prepare();
    // Keep every fetched pack, and let two packs be enough for git's automatic gc.
    await agentGit(first.dir, "config", "fetch.unpackLimit", "1");
    await agentGit(first.dir, "config", "gc.autoPackLimit", "1");
    await gh.commit(repo, { files: { "README.md": "# more\n" } });
    expect((await prepare()).update.kind).toBe("fast-forwarded");
    expect(await packs(first.dir)).toBe(2);
    expect(
      await ws.maintain({ repoId: repoIdOf(repo), repo, issueNumber: 1, agent: "tether" }),
    ).toBe("done");
    expect(await packs(first.dir)).toBe(1);
    expect(await agentGit(first.dir, "rev-parse", "HEAD")).toBe(await gh.sha(repo, "main"));
  });

  it("says when there is nothing to maintain or it was cancelled", async () => {
    const key = { repoId: repoIdOf(repo), repo, issueNumber: 404, agent: "tether" };
    expect(await ws.maintain(key)).toBe("no-checkout");
    await prepare({ issueNumber: 404 });
    const aborted = new AbortController();
    aborted.abort();
    expect(await ws.maintain(key, aborted.signal)).toBe("cancelled");
  });
});

describe("a later turn after maintain(): the checkout as the last turn left it", () => {
  const key = () => ({ repoId: repoIdOf(repo), repo, issueNumber: 1, agent: "tether" });

  it("uses the look maintain() took after the agent's turn instead of taking one, once", async () => {
    const first = await prepare();
    // The agent's turn: a commit of its own and an edit it did not commit.
    await fs.writeFile(path.join(first.dir, "local.txt"), "local\n");
    await agentGit(first.dir, "add", "local.txt");
    await agentGit(first.dir, "commit", "-qm", "local work");
    const local = await agentGit(first.dir, "rev-parse", "HEAD");
    await fs.writeFile(path.join(first.dir, "src/app.ts"), "agent's edit\n");
    expect(await ws.maintain(key())).toBe("done");

    logLines = [];
    const second = await prepare();
    // What the agent did after the first prepare() is there: the look is the one after the turn.
    expect(second.update).toEqual({ kind: "up-to-date", ahead: 1 });
    expect(second.headSha).toBe(local);
    expect(steps().sandboxed).toEqual([]);
    expect(logLines.some((l) => l.includes("checkout as the last turn left it"))).toBe(true);

    // Used once: a turn that did not reach maintain() leaves the next prepare() to look itself.
    await agentGit(first.dir, "checkout", "-qb", "agent-branch");
    logLines = [];
    const third = await prepare();
    expect(third.update).toMatchObject({ kind: "left", reason: "other-branch" });
    expect(steps().sandboxed).toHaveLength(1);
  });

  it("a new upstream commit still fetches into the checkout and fast-forwards", async () => {
    await prepare();
    expect(await ws.maintain(key())).toBe("done");
    const sha = await gh.commit(repo, { files: { "src/app.ts": "export const v = 2;\n" } });
    logLines = [];
    const second = await prepare();
    expect(second.update).toMatchObject({ kind: "fast-forwarded", to: sha });
    expect(await read(second.dir, "src/app.ts")).toBe("export const v = 2;\n");
    // The checkout's own fetch and the move; no look before them.
    expect(steps().sandboxed).toHaveLength(2);
  });

  it("publishing's commit in the checkout drops the look; a cancelled maintain() takes none", async () => {
    const first = await prepare();
    expect(await ws.maintain(key())).toBe("done");
    await fs.writeFile(path.join(first.dir, "new.txt"), "new\n");
    const collected = await ws.collect({
      ...key(),
      branch: "main",
      upstreamRef: first.upstream.ref,
      identity: { name: "Tether", email: "tether@example.invalid" },
      message: "the turn's changes",
      trailers: [],
    });
    expect(collected.kind).toBe("committed");
    if (collected.kind === "committed") await collected.dispose();
    logLines = [];
    expect((await prepare()).update).toEqual({ kind: "up-to-date", ahead: 1 });
    expect(steps().sandboxed).toHaveLength(1);

    const aborted = new AbortController();
    aborted.abort();
    expect(await ws.maintain(key(), aborted.signal)).toBe("cancelled");
    logLines = [];
    await prepare();
    expect(steps().sandboxed).toHaveLength(1);
  });

  it("is not used past the freshness window (mirrorFreshMs: 0), nor by another process", async () => {
    const strict = await Workspaces.open({
      root,
      sandbox,
      log,
      gitHome: path.join(scratch, "git-home"),
      mirrorFreshMs: 0,
    });
    await prepare({}, strict);
    expect(await strict.maintain(key())).toBe("done");
    logLines = [];
    await prepare({}, strict);
    expect(steps().sandboxed).toHaveLength(1);

    expect(await ws.maintain(key())).toBe("done");
    const other = await Workspaces.open({
      root,
      sandbox,
      log,
      gitHome: path.join(scratch, "git-home"),
    });
    logLines = [];
    await prepare({}, other);
    expect(steps().sandboxed).toHaveLength(1);
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
    const first = await prepare();
    await execa("git", ["clone", "-q", libUrl, path.join(first.dir, "lib")], {
      env: { PATH: process.env.PATH, HOME: scratch, ...gitAuthEnv(libUrl, token) },
      extendEnv: false,
    });
    await agentGit(first.dir, "submodule", "init");
    await agentGit(first.dir, "submodule", "absorbgitdirs");
    const next = await gh.commit(lib, { files: { "lib.txt": "2\n" } });
    await commitGitlink(repo, libUrl, next);
    const before = gh.requests.length;
    expect((await prepare()).update.kind).toBe("fast-forwarded");
    const libRequests = gh.requests
      .slice(before)
      .filter((r) => r.kind === "git" && r.path.includes(`/${libName}`));
    expect(libRequests).toEqual([]);
  });
});

describe("publishing: the conversation branch and the turn's commit", () => {
  const branch = "tether/1-tether";
  const tether = { name: "tether[bot]", email: "41+tether[bot]@users.noreply.github.com" };
  const collect = (w: Workspace, over: Partial<Parameters<Workspaces["collect"]>[0]> = {}) =>
    ws.collect({
      repoId: repoIdOf(repo),
      repo,
      issueNumber: 1,
      agent: "tether",
      branch,
      upstreamRef: w.upstream.ref,
      identity: tether,
      message: "Fix the parser (#1)\n\nChanges by the agent.",
      trailers: ["Co-authored-by: alice <7+alice@users.noreply.github.com>"],
      ...over,
    });

  it("an issue's workspace follows its conversation branch once GitHub has it: a first clone checks it out", async () => {
    const tip = await gh.commit(repo, { branch, files: { "NOTES.md": "hi\n" } });
    const w = await prepare({ follow: branch });
    expect(w).toMatchObject({
      branch,
      headSha: tip,
      upstream: { ref: `refs/remotes/origin/${branch}`, sha: tip },
    });
    expect(await read(w.dir, "NOTES.md")).toBe("hi\n");
  });

  it("a later turn switches to the branch when it appears, and follows the default branch until then", async () => {
    const first = await prepare({ follow: branch });
    expect(first.branch).toBe("main");
    const tip = await gh.commit(repo, { branch, files: { "NOTES.md": "hi\n" } });
    const next = await prepare({ follow: branch });
    expect(next.update).toEqual({ kind: "switched", branch });
    expect(next.upstream.sha).toBe(tip);
  });

  it("folds edits, untracked files and the agent's own commit into one commit by Tether whose parent is the shared commit; the checkout stands on it, clean", async () => {
    const w = await prepare({ follow: branch });
    await fs.writeFile(path.join(w.dir, "src/app.ts"), "export const v = 2;\n");
    await agentGit(w.dir, "commit", "-qam", "Bump v");
    await fs.writeFile(path.join(w.dir, "README.md"), "# widgets, edited\n");
    await fs.writeFile(path.join(w.dir, "NEW.md"), "new\n");
    await fs.writeFile(path.join(w.dir, ".gitignore"), "build/\n");
    await fs.mkdir(path.join(w.dir, "build"));
    await fs.writeFile(path.join(w.dir, "build/out.js"), "ignored\n");
    const c = await collect(w);
    expect(c.kind).toBe("committed");
    if (c.kind !== "committed") return;
    expect(c.base).toBe(w.upstream.sha);
    expect(c.agentCommits).toBe(1);
    expect(await agentGit(w.dir, "rev-parse", "--abbrev-ref", "HEAD")).toBe(branch);
    expect(await agentGit(w.dir, "rev-parse", "HEAD")).toBe(c.commit);
    expect(await agentGit(w.dir, "status", "--porcelain")).toBe("");
    expect(await agentGit(w.dir, "log", "-1", "--format=%P|%an|%ae|%cn", c.commit)).toBe(
      `${c.base}|tether[bot]|${tether.email}|tether[bot]`,
    );
    // The agent's one commit gave the message; the trailer closes it.
    expect(await agentGit(w.dir, "log", "-1", "--format=%B", c.commit)).toBe(
      "Bump v\n\nCo-authored-by: alice <7+alice@users.noreply.github.com>",
    );
    expect(
      (await agentGit(w.dir, "diff", "--name-only", c.base, c.commit)).split("\n").sort(),
    ).toEqual([".gitignore", "NEW.md", "README.md", "src/app.ts"]);
    // The bundle holds the one commit on top of the shared one, for the mirror to fetch.
    const head = (await fs.readFile(c.bundle)).subarray(0, 16).toString();
    expect(head).toMatch(/^# v[23] git bundle\n$/);
    await c.dispose();
    await expect(fs.stat(c.bundle)).rejects.toThrow(/ENOENT/);
  });

  it("a turn that changed nothing (or only ignored files) hands over nothing", async () => {
    const w = await prepare({ follow: branch });
    expect(await collect(w)).toEqual({ kind: "unchanged" });
    await fs.writeFile(path.join(w.dir, ".git/info/exclude"), "scratch/\n");
    await fs.mkdir(path.join(w.dir, "scratch"));
    await fs.writeFile(path.join(w.dir, "scratch/x"), "x\n");
    expect(await collect(w)).toEqual({ kind: "unchanged" });
    // An empty commit of the agent's own changes no file either.
    await agentGit(w.dir, "commit", "-q", "--allow-empty", "-m", "nothing");
    expect(await collect(w)).toEqual({ kind: "unchanged" });
  });

  it("a merge under way in the checkout is not taken from", async () => {
    const w = await prepare({ follow: branch });
    await fs.writeFile(path.join(w.dir, "README.md"), "edited\n");
    await fs.writeFile(path.join(w.dir, ".git/MERGE_HEAD"), `${w.headSha}\n`);
    expect(await collect(w)).toEqual({ kind: "blocked", reason: "operation-in-progress" });
  });

  it("drill: the secret scan reads a file made to look binary (a NUL byte) as text", async () => {
    const { MirrorGit } = await import("../../src/publish/mirror-git.js");
    const { scanDiff } = await import("../../src/publish/secret-scan.js");
    const dir = path.join(scratch, `binary-secret-${++repoCount}`);
    const git = (...args: string[]) =>
      execa("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: dir });
    await fs.mkdir(dir);
    await git("init", "-q");
    await fs.writeFile(path.join(dir, "README.md"), "base\n");
    await git("add", "-A");
    await git("commit", "-q", "-m", "base");
    const base = (await git("rev-parse", "HEAD")).stdout.trim();
    // git calls a file with a NUL byte binary and shows no line of it in a plain diff.
    const token = `ghp_${"A1b2C3d4E5".repeat(4).slice(0, 36)}`;
    await fs.writeFile(path.join(dir, "notes.dat"), `\0\ntoken = ${token}\n`);
    await git("add", "-A");
    await git("commit", "-q", "-m", "notes");
    const head = (await git("rev-parse", "HEAD")).stdout.trim();
    const m = new MirrorGit(ws.mirrors.git, dir, { repo, host: "", timeoutMs: 60_000 });
    const diff = await m.diff(base, head, 1 << 20);
    expect(scanDiff(diff.text, [])).toEqual([
      { path: "notes.dat", line: 2, kind: "a GitHub token" },
    ]);
  });

  it("drill: a bundle left as a link (to another repository's mirror) is not read", async () => {
    const { MirrorGit } = await import("../../src/publish/mirror-git.js");
    const w = await prepare();
    const other = path.join(scratch, "elsewhere.bundle");
    await fs.writeFile(other, "# v2 git bundle\n");
    const link = path.join(scratch, `link-${repoCount}.bundle`);
    await fs.symlink(other, link);
    const m = new MirrorGit(ws.mirrors.git, w.origin, { repo, host: "", timeoutMs: 60_000 });
    expect(await m.importBundle(link, `refs/heads/${branch}`, "refs/tether/x", 1 << 20)).toEqual({
      ok: false,
      why: "not-a-bundle",
    });
    expect(await m.resolve("refs/tether/x")).toBeNull();
  });
});

describe("a plan turn's hold on the checkout (/plan)", () => {
  it("puts back everything a run wrote, committed or not, and keeps what was there before", async () => {
    const w = await prepare();
    const key = { repoId: repoIdOf(repo), repo, issueNumber: 1, agent: "tether" };
    // Earlier work a plan must not lose: a changed file, an untracked one, an ignored one.
    await fs.writeFile(path.join(w.dir, "src/app.ts"), "export const v = 2;\n");
    await fs.writeFile(path.join(w.dir, "notes.txt"), "mine\n");
    await fs.writeFile(path.join(w.dir, ".gitignore"), "build/\n");
    await fs.mkdir(path.join(w.dir, "build"));
    await fs.writeFile(path.join(w.dir, "build/out.js"), "1\n");
    const head = await agentGit(w.dir, "rev-parse", "HEAD");
    const branch = await agentGit(w.dir, "symbolic-ref", "HEAD");

    const hold = await ws.holdForPlan(key);
    // What a shell could do in a plan turn: write, delete, commit, switch branch.
    await fs.writeFile(path.join(w.dir, "src/app.ts"), "export const v = 3;\n");
    await fs.writeFile(path.join(w.dir, "leak.txt"), "x\n");
    await fs.mkdir(path.join(w.dir, "newdir"));
    await fs.writeFile(path.join(w.dir, "newdir/file.txt"), "y\n");
    await fs.rm(path.join(w.dir, "README.md"));
    await fs.rm(path.join(w.dir, "notes.txt"));
    await agentGit(w.dir, "add", "-A");
    await agentGit(w.dir, "commit", "-qm", "sneaky");
    await agentGit(w.dir, "checkout", "-qb", "elsewhere");
    await fs.writeFile(path.join(w.dir, "more.txt"), "z\n");
    await hold.restore();

    expect(await agentGit(w.dir, "rev-parse", "HEAD")).toBe(head);
    expect(await agentGit(w.dir, "symbolic-ref", "HEAD")).toBe(branch);
    expect(await read(w.dir, "src/app.ts")).toBe("export const v = 2;\n");
    expect(await read(w.dir, "README.md")).toBe("# widgets\n");
    expect(await read(w.dir, "notes.txt")).toBe("mine\n");
    expect(await read(w.dir, "build/out.js")).toBe("1\n");
    for (const gone of ["leak.txt", "newdir", "more.txt"])
      await expect(fs.stat(path.join(w.dir, gone))).rejects.toThrow(/ENOENT/);
    // Ran as sandboxed git, like every other step in the checkout.
    expect(steps().sandboxed).toEqual(expect.arrayContaining(["plan-hold", "plan-restore"]));
  });
});
