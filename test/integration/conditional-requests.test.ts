/**
 * Conditional requests (#34): the reads that rarely change are asked with the validator of the
 * last answer (kept in Postgres), a 304 is served from the kept body and counted apart, and the
 * config is pinned until a push to its repository's default branch. GitHub by nock (with ETags
 * and 304s as GitHub sends them), the answers in a real Postgres.
 */
import { AGENT_CLIS } from "../../src/cli-registry.js";
import nock from "nock";
import { describe, expect, it } from "vitest";
import { loadRepoConfig } from "../../src/config/load-repo-config.js";
import { appOctokit } from "../../src/github/app-auth.js";
import {
  postgresAnswers,
  tokenFingerprint,
  type AnswerStore,
} from "../../src/github/conditional-requests.js";
import { RequestCounter } from "../../src/github/request-count.js";
import { takePush } from "../../src/intake/config-push.js";
import { createTestDatabase } from "../helpers/db.js";
import { API, rest, useNock } from "../helpers/intake-github.js";

useNock();
const db = await createTestDatabase();
const answers = postgresAnswers(db.pool);

let nextInstallation = 7100;
/** A task's client: a token, counted under a fresh installation (so tests do not share answers). */
function client(o: { token?: string; installationId?: number; store?: AnswerStore } = {}) {
  const counter = new RequestCounter(o.installationId ?? ++nextInstallation);
  const Octokit = appOctokit({ TETHER_GITHUB_THROTTLE: false }, { answers: o.store ?? answers });
  const octokit = new Octokit({
    auth: { token: o.token ?? "ghs_first" },
    githubRequests: counter,
  } as Record<string, unknown>);
  return { octokit, counter, installationId: counter.installationId };
}

const USER = "/users/alice";
/** A user as GET /users/{username} gives it (a public user: more than rest.user's fields). */
function fullUser(login: string, name: string | null = null) {
  return {
    ...rest.user(login),
    name,
    company: null,
    blog: "",
    location: null,
    email: null,
    hireable: null,
    bio: null,
    public_repos: 0,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-11-20T12:00:00Z",
  };
}
/** A scope whose interceptors refuse a request carrying a validator. */
const unconditional = () => nock(API, { badheaders: ["if-none-match", "if-modified-since"] });
const etagOf = (s: string) => `W/"${s}"`;

describe("conditional requests", () => {
  it("asks again with the ETag this token got, and serves a 304 from the kept answer, counted apart", async () => {
    const { octokit, counter } = client();
    const user = fullUser("alice");
    nock(API)
      .get(USER)
      .reply(200, user, { etag: etagOf("u1") })
      .get(USER)
      .matchHeader("if-none-match", etagOf("u1"))
      .reply(304, "", { etag: etagOf("u1") });
    const first = await octokit.rest.users.getByUsername({ username: "alice" });
    const second = await octokit.rest.users.getByUsername({ username: "alice" });
    expect(second.status).toBe(200);
    expect(second.data).toEqual(first.data);
    expect(counter).toMatchObject({ count: 1, notModified: 1 });
  });

  it("takes a changed answer (200) and keeps it for the next time", async () => {
    const { octokit, counter } = client();
    nock(API)
      .get(USER)
      .reply(200, fullUser("alice", "Alice"), { etag: etagOf("a") })
      .get(USER)
      .matchHeader("if-none-match", etagOf("a"))
      .reply(200, fullUser("alice", "Alice B."), { etag: etagOf("b") })
      .get(USER)
      .matchHeader("if-none-match", etagOf("b"))
      .reply(304, "");
    await octokit.rest.users.getByUsername({ username: "alice" });
    expect((await octokit.rest.users.getByUsername({ username: "alice" })).data.name).toBe(
      "Alice B.",
    );
    expect((await octokit.rest.users.getByUsername({ username: "alice" })).data.name).toBe(
      "Alice B.",
    );
    expect(counter).toMatchObject({ count: 2, notModified: 1 });
  });

  it("sends another token's Last-Modified, never its ETag alone when a date is known (GitHub's ETags are per token)", async () => {
    const installationId = ++nextInstallation;
    const a = client({ installationId, token: "ghs_runner_a" });
    const b = client({ installationId, token: "ghs_runner_b" });
    const lastModified = "Fri, 20 Nov 2026 12:00:00 GMT";
    nock(API)
      .get(USER)
      .reply(200, fullUser("alice"), { etag: etagOf("for-a"), "last-modified": lastModified });
    nock(API, { badheaders: ["if-none-match"] })
      .get(USER)
      .matchHeader("if-modified-since", lastModified)
      .reply(304, "", { etag: etagOf("for-b") });
    nock(API).get(USER).matchHeader("if-none-match", etagOf("for-b")).reply(304, "");
    await a.octokit.rest.users.getByUsername({ username: "alice" });
    const served = await b.octokit.rest.users.getByUsername({ username: "alice" });
    expect(served.data.login).toBe("alice");
    // b's own ETag (from its 304) is used next.
    await b.octokit.rest.users.getByUsername({ username: "alice" });
    expect(b.counter).toMatchObject({ count: 0, notModified: 2 });
    // Tokens are kept by fingerprint only.
    const { rows } = await db.pool.query<{ token_fingerprint: string }>(
      "SELECT token_fingerprint FROM github_cache WHERE installation_id = $1 ORDER BY 1",
      [installationId],
    );
    expect(rows.map((r) => r.token_fingerprint)).toEqual(
      [tokenFingerprint("ghs_runner_a"), tokenFingerprint("ghs_runner_b")].sort(),
    );
    expect(JSON.stringify(rows)).not.toContain("ghs_runner");
  });

  it("keeps nothing across installations, and nothing for writes", async () => {
    const one = client();
    const two = client();
    const branch = "/repos/octo/widgets/branches/main";
    unconditional()
      .get(branch)
      .times(2)
      .reply(200, rest.branch("octo/widgets", "main", "a".repeat(40)), { etag: etagOf("br") })
      .post("/repos/octo/widgets/issues/1/comments")
      .reply(201, rest.issueComment("octo/widgets", 1, 5, "hi"), { etag: etagOf("c") });
    await one.octokit.rest.repos.getBranch({ owner: "octo", repo: "widgets", branch: "main" });
    await two.octokit.rest.repos.getBranch({ owner: "octo", repo: "widgets", branch: "main" });
    await one.octokit.rest.issues.createComment({
      owner: "octo",
      repo: "widgets",
      issue_number: 1,
      body: "hi",
    });
    expect(one.counter.count + two.counter.count).toBe(3);
  });

  it("asks GitHub as before when the store fails", async () => {
    const broken: AnswerStore = {
      lookUp: () => Promise.reject(new Error("connection refused")),
      store: () => Promise.reject(new Error("connection refused")),
    };
    const { octokit, counter } = client({ store: broken });
    unconditional()
      .get(USER)
      .times(2)
      .reply(200, fullUser("alice"), { etag: etagOf("x") });
    await octokit.rest.users.getByUsername({ username: "alice" });
    await octokit.rest.users.getByUsername({ username: "alice" });
    expect(counter.count).toBe(2);
  });
});

describe("the config, pinned until a push", () => {
  const repoFile = "/repos/octo/widgets/contents/.github%2Ftether.yml";
  const orgFile = "/repos/octo/.github/contents/.github%2Ftether.yml";
  const raw = { "content-type": "application/vnd.github.raw; charset=utf-8" };

  it("is read once, then served without a request until a push to the default branch; then asked conditionally", async () => {
    const { octokit, counter } = client();
    const yaml = "agents:\n  tether:\n    model: claude-sonnet-4-5\n";
    nock(API)
      .get(repoFile)
      .reply(200, yaml, { ...raw, etag: etagOf("cfg1") });
    const first = await loadRepoConfig(
      octokit,
      { owner: "octo", repo: "widgets" },
      { clis: AGENT_CLIS },
    );
    expect(first).toMatchObject({ ok: true, repoFile: true });
    // No push seen from this repository yet (the app may lack the push event): asked again,
    // conditionally, every time.
    nock(API).get(repoFile).matchHeader("if-none-match", etagOf("cfg1")).reply(304, "");
    expect(
      await loadRepoConfig(octokit, { owner: "octo", repo: "widgets" }, { clis: AGENT_CLIS }),
    ).toEqual(first);
    expect(counter).toMatchObject({ count: 1, notModified: 1 });
    // Once pushes arrive, the answer is pinned.
    await takePush(db.pool, {
      ref: "refs/heads/main",
      repository: { full_name: "octo/widgets", default_branch: "main" },
    });
    nock(API).get(repoFile).matchHeader("if-none-match", etagOf("cfg1")).reply(304, "");
    await loadRepoConfig(octokit, { owner: "octo", repo: "widgets" }, { clis: AGENT_CLIS });
    counter.notModified = 0;
    // No interceptor: a request would fail the test.
    const second = await loadRepoConfig(
      octokit,
      { owner: "octo", repo: "widgets" },
      { clis: AGENT_CLIS },
    );
    expect(second).toEqual(first);
    expect(counter).toMatchObject({ count: 1, notModified: 0 });

    // A push elsewhere changes nothing.
    const elsewhere = {
      ref: "refs/heads/feature",
      repository: { full_name: "octo/widgets", default_branch: "main" },
    };
    expect(await takePush(db.pool, elsewhere)).toEqual({ ignore: "push to another branch" });
    await loadRepoConfig(octokit, { owner: "octo", repo: "widgets" }, { clis: AGENT_CLIS });
    expect(counter.count).toBe(1);

    // A push to the default branch: asked again, with the ETag; a 304 is free.
    const pushed = { ...elsewhere, ref: "refs/heads/main" };
    expect(await takePush(db.pool, pushed)).toMatchObject({ recorded: expect.any(String) });
    nock(API)
      .get(repoFile)
      .matchHeader("if-none-match", etagOf("cfg1"))
      .reply(304, "", { etag: etagOf("cfg1") });
    expect(
      await loadRepoConfig(octokit, { owner: "octo", repo: "widgets" }, { clis: AGENT_CLIS }),
    ).toEqual(first);
    expect(counter).toMatchObject({ count: 1, notModified: 1 });
    // … and pinned again.
    await loadRepoConfig(octokit, { owner: "octo", repo: "widgets" }, { clis: AGENT_CLIS });

    // The file changed in the next push: the new one is read.
    await takePush(db.pool, pushed);
    const changed = "agents:\n  tether:\n    model: claude-opus-4-1\n";
    nock(API)
      .get(repoFile)
      .matchHeader("if-none-match", etagOf("cfg1"))
      .reply(200, changed, { ...raw, etag: etagOf("cfg2") });
    const after = await loadRepoConfig(
      octokit,
      { owner: "octo", repo: "widgets" },
      { clis: AGENT_CLIS },
    );
    expect(after.ok && after.config.agents.tether?.model).toBe("claude-opus-4-1");
  });

  it("pins a repository without a file of its own (404) and the organisation's file; a push to the org's .github asks that one again", async () => {
    const { octokit, counter } = client();
    for (const full_name of ["octo/widgets", "octo/.github"])
      await takePush(db.pool, {
        ref: "refs/heads/main",
        repository: { full_name, default_branch: "main" },
      });
    const orgYaml = "agents:\n  tether:\n    model: claude-sonnet-4-5\n";
    nock(API)
      .get(repoFile)
      .reply(404, { message: "Not Found", documentation_url: "https://docs.github.com" })
      .get(orgFile)
      .reply(200, orgYaml, { ...raw, etag: etagOf("org1") });
    const first = await loadRepoConfig(
      octokit,
      { owner: "octo", repo: "widgets" },
      { clis: AGENT_CLIS },
    );
    expect(first).toMatchObject({ ok: true, repoFile: false });
    expect(
      await loadRepoConfig(octokit, { owner: "octo", repo: "widgets" }, { clis: AGENT_CLIS }),
    ).toEqual(first);
    expect(counter.count).toBe(2);

    await takePush(db.pool, {
      ref: "refs/heads/main",
      repository: { full_name: "octo/.github", default_branch: "main" },
    });
    nock(API).get(orgFile).matchHeader("if-none-match", etagOf("org1")).reply(304, "");
    expect(
      await loadRepoConfig(octokit, { owner: "octo", repo: "widgets" }, { clis: AGENT_CLIS }),
    ).toEqual(first);
    expect(counter).toMatchObject({ count: 2, notModified: 1 });
  });

  it("reports a push it cannot read, and records nothing", async () => {
    expect(await takePush(db.pool, { ref: 3 })).toMatchObject({
      ignore: expect.stringMatching(/^unexpected push payload: ref: /),
    });
  });
});
