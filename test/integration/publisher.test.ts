/**
 * The publisher against the real thing where it matters: the workspace and its sandbox, the
 * mirror, the GitHub stand-in's git, Postgres. GitHub's REST side is a narrow writer (the
 * end-to-end tests run it for real). These are the drills on what the sandbox hands over: the
 * bundle is data, and a commit that is not the one Tether made there is never pushed.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../src/config/repo-config.js";
import { cloneUrlFor } from "../../src/github/git-auth.js";
import { pushPermissions } from "../../src/github/scoped-auth.js";
import { createLogger } from "../../src/log.js";
import { publisher, type PublishRequest } from "../../src/publish/publisher.js";
import type { RepoWriter } from "../../src/runner/ports.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";
import { getConversation } from "../../src/sql/conversations.js";
import { Workspaces } from "../../src/workspace/workspace.js";
import { createTestDatabase } from "../helpers/db.js";
import { BULK_FILES, forgedBaseAttack } from "../hardening/helpers/forged-base.js";
import { startFakeGitHub, type FakeGitHub } from "../helpers/fake-github.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
const log = createLogger("silent");
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
  };
}

async function setup() {
  n++;
  const name = `gadgets-${n}`;
  const repo = `octo/${name}`;
  await gh.addRepo({ owner: "octo", name, files: { "README.md": "# gadgets\n" } });
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
    config: DEFAULT_CONFIG.publish,
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
        config: { ...DEFAULT_CONFIG.publish, maxFiles: BULK_FILES + 10 },
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
});
