/**
 * The GitHub stand-ins held to GitHub's OpenAPI description (test/helpers/openapi.ts): a broken
 * answer or a request GitHub does not take is caught, by the checker itself and by FakeGitHub
 * (whose close() then fails); and the stand-in's review-comment routes and stateless tokens.
 * useNock()'s checks: test/unit/openapi-nock.test.ts (nock patches fetch for its whole file).
 */
import { Octokit } from "@octokit/rest";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startFakeGitHub, type FakeGitHub } from "../helpers/fake-github.js";
import { rest } from "../helpers/rest-shapes.js";
import { checkRequest, checkResponse, findOperation } from "../helpers/openapi.js";
import type * as OpenApi from "../helpers/openapi.js";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
/** A comment created on an issue: the request both checker blocks hold answers to. */
const create = {
  method: "POST",
  path: "/repos/octo/widgets/issues/1/comments",
  query: {},
  body: { body: "hi" },
};

describe("the checker", () => {
  it("passes a stand-in answer with every required field and fails it with one missing", () => {
    const good = rest.issueComment("octo/widgets", 1, 5, "hi");
    expect(checkResponse(create, { status: 201, body: good })).toEqual([]);
    const broken: Record<string, unknown> = { ...good };
    delete broken.html_url;
    expect(checkResponse(create, { status: 201, body: broken })).toEqual([
      expect.stringMatching(/response body must have required property 'html_url'/),
    ]);
    expect(checkResponse(create, { status: 201, body: { ...good, id: "5" } })).toEqual([
      expect.stringMatching(/response body\/id must be integer/),
    ]);
  });

  it("fails a status the operation does not document, and checks generic errors as errors", () => {
    expect(checkResponse(create, { status: 418, body: {} })).toEqual([
      expect.stringMatching(/status 418 is not one GitHub documents/),
    ]);
    expect(checkResponse(create, { status: 503, body: { message: "down" } })).toEqual([]);
    expect(checkResponse(create, { status: 404, body: { message: 404 } })).toEqual([
      expect.stringMatching(/message must be string/),
    ]);
  });

  it("fails requests GitHub has no operation for, and a body field of the wrong type", () => {
    expect(checkRequest(create)).toEqual([]);
    expect(checkRequest({ ...create, path: "/repos/octo/widgets/issues/1/replies" })).toEqual([
      expect.stringMatching(/GitHub has no such operation/),
    ]);
    expect(checkRequest({ ...create, method: "PUT" })).toEqual([
      expect.stringMatching(/GitHub has no such operation/),
    ]);
    expect(checkRequest({ ...create, body: { body: 42 } })).toEqual([
      expect.stringMatching(/request body\/body must be string/),
    ]);
    expect(checkRequest({ ...create, body: undefined })).toEqual([
      expect.stringMatching(/the request body is missing/),
    ]);
  });

  it("checks path and query parameters", () => {
    const list = { method: "GET", path: "/repos/octo/widgets/issues/1/comments", body: undefined };
    expect(checkRequest({ ...list, query: { per_page: "100", page: "2" } })).toEqual([]);
    expect(checkRequest({ ...list, query: { per_page: "many" } })).toEqual([
      expect.stringMatching(/query parameter per_page must be integer/),
    ]);
    expect(checkRequest({ ...list, query: { colour: "red" } })).toEqual([
      expect.stringMatching(/query parameter colour is not one of the operation's/),
    ]);
    expect(
      checkRequest({
        method: "GET",
        path: "/repos/octo/widgets/issues/x",
        query: {},
        body: undefined,
      }),
    ).toEqual([expect.stringMatching(/path parameter issue_number must be integer/)]);
  });

  it("matches the most literal path: /pulls/comments/{id} is not /pulls/{pull_number}/…", () => {
    expect(findOperation("GET", "/repos/o/r/pulls/comments/7")?.operation.template).toBe(
      "/repos/{owner}/{repo}/pulls/comments/{comment_id}",
    );
    expect(findOperation("GET", "/repos/o/r/contents/.github%2Ftether.yml")?.params.path).toBe(
      ".github/tether.yml",
    );
  });
});

describe("FakeGitHub", () => {
  let gh: FakeGitHub;
  let octokit: Octokit;

  beforeAll(async () => {
    gh = await startFakeGitHub({ statelessTokens: true });
    await gh.addRepo({ owner: "octo", name: "widgets" });
    octokit = new Octokit({
      auth: gh.createInstallationToken(),
      baseUrl: gh.apiUrl,
      log: quiet,
      request: { retries: 0 },
    });
  });
  afterAll(() => gh.close());

  it("mints stateless-shaped installation tokens that work", async () => {
    const token = gh.createInstallationToken();
    expect(token).toMatch(
      new RegExp(`^ghs_${gh.appId}_[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`),
    );
    expect(token.length).toBeGreaterThan(480);
    expect(token.length).toBeLessThan(600);
    const ok = new Octokit({ auth: token, baseUrl: gh.apiUrl, log: quiet });
    expect((await ok.rest.repos.get({ owner: "octo", repo: "widgets" })).status).toBe(200);
  });

  it("serves a review comment and takes a reaction on it", async () => {
    const pr = await gh.addPullRequest({ repo: "octo/widgets", headRef: "topic" });
    const c = gh.addReviewComment({
      repo: "octo/widgets",
      number: pr.number as number,
      body: "Use a Map.",
      path: "topic.txt",
      line: 1,
      user: "reviewer",
    });
    const { data } = await octokit.rest.pulls.getReviewComment({
      owner: "octo",
      repo: "widgets",
      comment_id: c.id as number,
    });
    expect(data).toMatchObject({ id: c.id, body: "Use a Map.", user: { login: "reviewer" } });
    const r = await octokit.rest.reactions.createForPullRequestReviewComment({
      owner: "octo",
      repo: "widgets",
      comment_id: c.id as number,
      content: "eyes",
    });
    expect(r.status).toBe(201);
    expect(gh.reactions("octo/widgets", { reviewCommentId: c.id as number })).toEqual([
      { user: gh.botLogin(), content: "eyes" },
    ]);
    const again = await octokit.rest.pulls.getReviewComment({
      owner: "octo",
      repo: "widgets",
      comment_id: c.id as number,
    });
    expect(again.data.reactions).toMatchObject({ eyes: 1, total_count: 1 });
    await expect(
      octokit.rest.pulls.getReviewComment({ owner: "octo", repo: "widgets", comment_id: 1 }),
    ).rejects.toMatchObject({ status: 404 });
    expect(gh.takeOpenapiViolations()).toEqual([]);
  });

  it("records a request GitHub has no operation for, and a body field of the wrong type", async () => {
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/replies", {
        owner: "octo",
        repo: "widgets",
        issue_number: 1,
        body: "x",
      }),
    ).rejects.toMatchObject({ status: 404 });
    const issue = gh.addIssue({ repo: "octo/widgets" });
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
        owner: "octo",
        repo: "widgets",
        issue_number: issue.number as number,
        body: 42 as never,
      }),
    ).rejects.toMatchObject({ status: 422 });
    expect(gh.takeOpenapiViolations()).toEqual([
      expect.stringMatching(/POST \/repos\/octo\/widgets\/issues\/1\/replies: GitHub has no such/),
      expect.stringMatching(/POST \/repos\/octo\/widgets\/issues\/1\/replies 404: GitHub has no/),
      expect.stringMatching(/issues\/\d+\/comments .*request body\/body must be string/),
    ]);
  });

  it("records an answer missing a required field, and close() fails on what is left", async () => {
    const local = await startFakeGitHub();
    await local.addRepo({ owner: "octo", name: "widgets" });
    const issue = local.addIssue({ repo: "octo/widgets" });
    const client = new Octokit({
      auth: local.createInstallationToken(),
      baseUrl: local.apiUrl,
      log: quiet,
    });
    // A drifted answer: the issue without its html_url.
    const broken = { ...local.issueJson("octo/widgets", issue.number as number) };
    delete broken.html_url;
    local.failNext({ method: "GET", path: /\/issues\/1$/ }, { status: 200, body: broken });
    await client.rest.issues.get({ owner: "octo", repo: "widgets", issue_number: 1 });
    expect(local.openapiViolations).toEqual([
      expect.stringMatching(
        /GET \/repos\/octo\/widgets\/issues\/1 200 .* required property 'html_url'/,
      ),
    ]);
    await expect(local.close()).rejects.toThrow(/OpenAPI description does not allow:\n.*html_url/);
  });
});

describe("the checker's disk cache", () => {
  const good = rest.issueComment("octo/widgets", 1, 5, "hi");
  const verdicts = (m: typeof OpenApi) => [
    m.checkRequest(create),
    m.checkRequest({ ...create, body: { body: 5 } }),
    m.checkResponse(create, { status: 201, body: good }),
    m.checkResponse(create, { status: 201, body: { ...good, id: "5", html_url: undefined } }),
    m.checkResponse(create, { status: 503, body: {} }),
    m.checkRequest({
      method: "GET",
      path: "/repos/o/r/issues",
      query: { per_page: "x" },
      body: undefined,
    }),
  ];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-openapi-cache-"));
  // Inside node_modules' parent chain, as the real cache is, so the cached code finds ajv.
  const cacheDir = path.join(process.cwd(), "node_modules", ".cache", path.basename(dir));
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(cacheDir, { recursive: true, force: true });
  });

  /** The checker as the next test file meets it: its modules and Node's require cache anew. */
  async function fresh(): Promise<typeof OpenApi> {
    vi.resetModules();
    const required = createRequire(import.meta.url).cache;
    for (const k of Object.keys(required)) if (k.startsWith(cacheDir)) delete required[k];
    process.env.OPENAPI_CACHE_DIR = cacheDir;
    try {
      return await import("../helpers/openapi.js");
    } finally {
      delete process.env.OPENAPI_CACHE_DIR;
    }
  }

  it("a validator read back from the cache gives the verdicts a fresh compile gives, and is what runs", async () => {
    const compiled = verdicts(await fresh());
    expect(compiled[0]).toEqual([]);
    expect(compiled[1]).toEqual([expect.stringMatching(/request body\/body must be/)]);
    expect(compiled[3]?.length).toBeGreaterThan(0);
    expect(compiled[5]).toEqual([expect.stringMatching(/query parameter per_page/)]);
    const files = fs.readdirSync(cacheDir);
    expect(files.some((f) => f.startsWith("lean-"))).toBe(true);
    const modules = files.filter((f) => f.endsWith(".cjs"));
    expect(modules.length).toBeGreaterThanOrEqual(4);

    expect(verdicts(await fresh())).toEqual(compiled);

    // The next file runs what the cache holds: a validator replaced there is the one used.
    for (const f of modules)
      fs.writeFileSync(
        path.join(cacheDir, f),
        "module.exports = function v() { v.errors = null; return true; };",
      );
    const tampered = verdicts(await fresh());
    expect(tampered[1]).toEqual([]);
    expect(tampered[3]).toEqual([]);
  });
});
