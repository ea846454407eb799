import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Octokit } from "@octokit/rest";
import { execa } from "execa";
import { pino } from "pino";
import { Probot, ProbotOctokit, createNodeMiddleware } from "probot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  rateLimited,
  signedWebhook,
  startFakeGitHub,
  type FakeGitHub,
  type Json,
} from "../helpers/fake-github.js";

const REPO = "octo/widgets";
let gh: FakeGitHub;
let token: string;
let octokit: Octokit;
let scratch: string;

beforeAll(async () => {
  gh = await startFakeGitHub();
  await gh.addRepo({
    owner: "octo",
    name: "widgets",
    files: { "README.md": "# widgets\n", "src/index.ts": "export {};\n" },
  });
  token = gh.createInstallationToken();
  octokit = new Octokit({ auth: token, baseUrl: gh.apiUrl, log: quiet });
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), "tether-fake-gh-test-"));
});

afterAll(async () => {
  await gh?.close();
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

const silent = pino({ level: "silent" });
/** Octokit logs failed requests to the console by default; the failures here are on purpose. */
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
/** Probot's Octokit with retries and throttling off, so failures surface at once. */
const QuietOctokit = ProbotOctokit.defaults({
  retry: { enabled: false },
  throttle: { enabled: false },
});

function probot(privateKey = gh.privateKeyPem, secret = "s3cret"): Probot {
  return new Probot({
    appId: gh.appId,
    privateKey,
    secret,
    baseUrl: gh.apiUrl,
    log: silent,
    Octokit: QuietOctokit,
  });
}

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    return (err as { status: number }).status;
  }
}

describe("installation auth through a real Probot", () => {
  it("exchanges a JWT signed with the app's key for an installation token and uses it", async () => {
    const before = gh.issuedTokens().length;
    const app = probot();
    const kit = await app.auth(gh.installationId);
    const issue = gh.addIssue({ repo: REPO, title: "Probot auth" });
    const { data } = await kit.rest.issues.createComment({
      owner: "octo",
      repo: "widgets",
      issue_number: issue.number as number,
      body: "hello from probot",
    });
    expect(data.user?.login).toBe("tether[bot]");
    expect(data.performed_via_github_app?.id).toBe(gh.appId);

    const exchange = gh.requests.find(
      (r) => r.route === "POST /app/installations/{installation_id}/access_tokens",
    );
    expect(exchange?.status).toBe(201);
    expect(String(exchange?.headers.authorization)).toMatch(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/i);
    const issued = gh.issuedTokens().slice(before);
    expect(issued).toHaveLength(1);
    const post = gh.postedComments(REPO, issue.number as number);
    expect(post).toHaveLength(1);
    expect(post[0]?.token).toBe(issued[0]);
    expect(gh.comments(REPO, issue.number as number).map((c) => c.body)).toEqual([
      "hello from probot",
    ]);
    expect(gh.requestsWithBodyContaining("hello from probot")).toEqual(post);
    expect(gh.requestsWithBodyContaining(gh.privateKeyPem.slice(40, 80))).toEqual([]);
  });

  it("refuses a JWT signed with another key", async () => {
    const { generateKeyPairSync } = await import("node:crypto");
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 })
      .privateKey.export({ type: "pkcs1", format: "pem" })
      .toString();
    const kit = await probot(other).auth(gh.installationId);
    await expect(kit.rest.repos.get({ owner: "octo", repo: "widgets" })).rejects.toMatchObject({
      status: 401,
      message: expect.stringContaining("A JSON web token could not be decoded"),
    });
  });

  it("gives the environment that points a Tether process at it", () => {
    expect(gh.appEnv("s")).toEqual({
      APP_ID: String(gh.appId),
      PRIVATE_KEY: gh.privateKeyPem,
      WEBHOOK_SECRET: "s",
      GHE_HOST: gh.host,
      GHE_PROTOCOL: "http",
    });
    expect(gh.privateKeyPem).toContain("BEGIN RSA PRIVATE KEY");
  });

  it("answers the installation lookups Probot may make", async () => {
    const app = await probot().auth();
    const inst = await app.rest.apps.getRepoInstallation({ owner: "octo", repo: "widgets" });
    expect(inst.data.id).toBe(gh.installationId);
    expect((inst.data.account as { login: string }).login).toBe("octo");
    const byId = await app.rest.apps.getInstallation({ installation_id: gh.installationId });
    expect(byId.data.app_slug).toBe("tether");
    expect(await status(app.rest.apps.getInstallation({ installation_id: 999 }))).toBe(404);
  });

  it("reads .github/tether.yml through Probot's config plugin, and 404s the org's .github repo", async () => {
    await gh.addRepo({ owner: "octo", name: "configured" });
    await gh.setConfig("octo/configured", "agents:\n  reviewer:\n    model: sonnet\n");
    const kit = await probot().auth(gh.installationId);
    const found = await kit.config.get({
      owner: "octo",
      repo: "configured",
      path: ".github/tether.yml",
    });
    expect(found.config).toEqual({ agents: { reviewer: { model: "sonnet" } } });

    const missing = await kit.config.get({
      owner: "octo",
      repo: "widgets",
      path: ".github/tether.yml",
    });
    expect(missing.config).toEqual({});
    const lookups = gh.requests
      .map((r) => [decodeURIComponent(r.path).replace("/api/v3", ""), r.status])
      .filter(([p]) => String(p).endsWith("/contents/.github/tether.yml"));
    expect(lookups).toEqual(
      expect.arrayContaining([
        ["/repos/octo/configured/contents/.github/tether.yml", 200],
        ["/repos/octo/widgets/contents/.github/tether.yml", 404],
        ["/repos/octo/.github/contents/.github/tether.yml", 404],
      ]),
    );
  });
});

describe("REST shapes", () => {
  it("serves the repository with its default branch and a clone URL on the stand-in", async () => {
    const { data } = await octokit.rest.repos.get({ owner: "octo", repo: "widgets" });
    expect(data.full_name).toBe("octo/widgets");
    expect(data.default_branch).toBe("main");
    expect(data.clone_url).toBe(`${gh.url}/octo/widgets.git`);
    expect(data.owner.login).toBe("octo");
    expect(data.url).toBe(`${gh.apiUrl}/repos/octo/widgets`);
  });

  it("serves issues and marks pull requests", async () => {
    const issue = gh.addIssue({ repo: REPO, title: "Crash", body: "It crashes", user: "alice" });
    const { data } = await octokit.rest.issues.get({
      owner: "octo",
      repo: "widgets",
      issue_number: issue.number as number,
    });
    expect(data).toMatchObject({ title: "Crash", body: "It crashes", state: "open" });
    expect(data.user?.login).toBe("alice");
    expect(data.pull_request).toBeUndefined();

    const pr = await gh.addPullRequest({ repo: REPO, headRef: "fix-crash", user: "alice" });
    const asIssue = await octokit.rest.issues.get({
      owner: "octo",
      repo: "widgets",
      issue_number: pr.number as number,
    });
    expect(asIssue.data.pull_request?.url).toBe(
      `${gh.apiUrl}/repos/octo/widgets/pulls/${pr.number}`,
    );
    const pull = await octokit.rest.pulls.get({
      owner: "octo",
      repo: "widgets",
      pull_number: pr.number as number,
    });
    expect(pull.data.head.ref).toBe("fix-crash");
    expect(pull.data.head.sha).toBe(await gh.sha(REPO, "fix-crash"));
    expect(pull.data.base.ref).toBe("main");
    expect(pull.data.base.sha).toBe(await gh.sha(REPO, "main"));
    expect(await gh.sha(REPO, `refs/pull/${pr.number}/head`)).toBe(pull.data.head.sha);
    expect(
      await status(
        octokit.rest.pulls.get({
          owner: "octo",
          repo: "widgets",
          pull_number: issue.number as number,
        }),
      ),
    ).toBe(404);
  });

  it("paginates comments with per_page/page and a Link header", async () => {
    const issue = gh.addIssue({ repo: REPO });
    const n = issue.number as number;
    for (let i = 1; i <= 5; i++) gh.addComment({ repo: REPO, issueNumber: n, body: `c${i}` });
    const first = await octokit.rest.issues.listComments({
      owner: "octo",
      repo: "widgets",
      issue_number: n,
      per_page: 2,
    });
    expect(first.data.map((c) => c.body)).toEqual(["c1", "c2"]);
    expect(first.headers.link).toContain('rel="next"');
    expect(first.headers.link).toContain('page=3>; rel="last"');
    const all = await octokit.paginate(octokit.rest.issues.listComments, {
      owner: "octo",
      repo: "widgets",
      issue_number: n,
      per_page: 2,
    });
    expect(all.map((c) => c.body)).toEqual(["c1", "c2", "c3", "c4", "c5"]);
    expect(all[0]?.html_url).toBe(`${gh.url}/octo/widgets/issues/${n}#issuecomment-${all[0]?.id}`);
  });

  it("creates, reads, edits and deletes comments; reactions are idempotent", async () => {
    const n = gh.addIssue({ repo: REPO }).number as number;
    const created = await octokit.rest.issues.createComment({
      owner: "octo",
      repo: "widgets",
      issue_number: n,
      body: "working on it",
    });
    expect(created.status).toBe(201);
    const id = created.data.id;
    await octokit.rest.issues.updateComment({
      owner: "octo",
      repo: "widgets",
      comment_id: id,
      body: "done",
    });
    const read = await octokit.rest.issues.getComment({
      owner: "octo",
      repo: "widgets",
      comment_id: id,
    });
    expect(read.data.body).toBe("done");

    const human = gh.addComment({ repo: REPO, issueNumber: n, body: "@tether hi", user: "bob" });
    const r1 = await octokit.rest.reactions.createForIssueComment({
      owner: "octo",
      repo: "widgets",
      comment_id: human.id as number,
      content: "eyes",
    });
    const r2 = await octokit.rest.reactions.createForIssueComment({
      owner: "octo",
      repo: "widgets",
      comment_id: human.id as number,
      content: "eyes",
    });
    expect([r1.status, r2.status]).toEqual([201, 200]);
    expect(r2.data.id).toBe(r1.data.id);
    await octokit.rest.reactions.createForIssue({
      owner: "octo",
      repo: "widgets",
      issue_number: n,
      content: "rocket",
    });
    expect(gh.reactions(REPO, { commentId: human.id as number })).toEqual([
      { user: "tether[bot]", content: "eyes" },
    ]);
    expect(gh.reactions(REPO, { issueNumber: n })).toEqual([
      { user: "tether[bot]", content: "rocket" },
    ]);
    expect(
      await status(
        octokit.request("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", {
          owner: "octo",
          repo: "widgets",
          comment_id: human.id as number,
          content: "thumbsup" as never,
        }),
      ),
    ).toBe(422);
    // GitHub's description refuses that body too; the stand-in noted it, and it is no drift.
    expect(gh.takeOpenapiViolations()).toEqual([
      expect.stringMatching(/request body\/content must be equal to one of the allowed values/),
    ]);

    await octokit.rest.issues.deleteComment({ owner: "octo", repo: "widgets", comment_id: id });
    expect(
      await status(
        octokit.rest.issues.getComment({ owner: "octo", repo: "widgets", comment_id: id }),
      ),
    ).toBe(404);
    expect(gh.comments(REPO, n).map((c) => c.body)).toEqual(["@tether hi"]);
  });

  it("reports collaborator permission with GitHub's legacy permission and role name", async () => {
    gh.setPermission("wendy", "write");
    gh.setPermission("mia", "maintain", REPO);
    const perm = async (username: string) =>
      (
        await octokit.rest.repos.getCollaboratorPermissionLevel({
          owner: "octo",
          repo: "widgets",
          username,
        })
      ).data;
    expect(await perm("wendy")).toMatchObject({ permission: "write", role_name: "write" });
    expect(await perm("mia")).toMatchObject({ permission: "write", role_name: "maintain" });
    expect(await perm("octo")).toMatchObject({ permission: "admin" });
    const stranger = await perm("stranger");
    expect(stranger).toMatchObject({ permission: "read", user: { login: "stranger" } });
    expect(stranger.user?.permissions).toMatchObject({ push: false, pull: true });
  });

  it("serves file contents as base64 JSON and raw, and 404s absent files", async () => {
    await gh.setConfig(REPO, "resume: false\n");
    const json = await octokit.rest.repos.getContent({
      owner: "octo",
      repo: "widgets",
      path: ".github/tether.yml",
    });
    const file = json.data as { content: string; encoding: string; type: string };
    expect(file.type).toBe("file");
    expect(Buffer.from(file.content, "base64").toString()).toBe("resume: false\n");
    const raw = await octokit.rest.repos.getContent({
      owner: "octo",
      repo: "widgets",
      path: ".github/tether.yml",
      mediaType: { format: "raw" },
    });
    expect(raw.data).toBe("resume: false\n");
    const dir = await octokit.rest.repos.getContent({
      owner: "octo",
      repo: "widgets",
      path: "src",
    });
    expect((dir.data as Array<{ name: string }>).map((e) => e.name)).toEqual(["index.ts"]);
    expect(
      await status(
        octokit.rest.repos.getContent({ owner: "octo", repo: "widgets", path: "nope.txt" }),
      ),
    ).toBe(404);
    await gh.setConfig(REPO, null);
  });
});

describe("conditional requests, as GitHub answers them", () => {
  const issueReq = (t: string, headers: Record<string, string>, n: number) =>
    fetch(`${gh.apiUrl}/repos/octo/widgets/issues/${n}`, {
      headers: { authorization: `token ${t}`, accept: "application/vnd.github+json", ...headers },
    });

  it("sends an ETag per token and answers a matching If-None-Match with 304 and no body", async () => {
    const n = gh.addIssue({ repo: REPO, title: "Cached", body: "x", user: "alice" })
      .number as number;
    const first = await issueReq(token, {}, n);
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^W\/"[0-9a-f]+"$/);
    const again = await issueReq(token, { "if-none-match": etag }, n);
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    expect(again.headers.get("etag")).toBe(etag);
    expect(gh.requests.at(-1)).toMatchObject({ status: 304 });

    // GitHub's ETags are per token: another token's ETag brings the whole answer.
    const other = gh.createInstallationToken();
    const otherAnswer = await issueReq(other, { "if-none-match": etag }, n);
    expect(otherAnswer.status).toBe(200);
    expect(otherAnswer.headers.get("etag")).not.toBe(etag);

    // A change makes the old ETag stale.
    gh.editIssue(REPO, n, { body: "changed" });
    const changed = await issueReq(token, { "if-none-match": etag }, n);
    expect(changed.status).toBe(200);
    expect(((await changed.json()) as { body: string }).body).toBe("changed");
  });

  it("sends Last-Modified where the resource has updated_at and honours If-Modified-Since from any token", async () => {
    const n = gh.addIssue({ repo: REPO, title: "Dated", body: "x", user: "alice" })
      .number as number;
    const first = await issueReq(token, {}, n);
    const lastModified = first.headers.get("last-modified")!;
    expect(new Date(lastModified).toUTCString()).toBe(lastModified);
    const other = gh.createInstallationToken();
    expect((await issueReq(other, { "if-modified-since": lastModified }, n)).status).toBe(304);
    const earlier = new Date(Date.parse(lastModified) - 60_000).toUTCString();
    expect((await issueReq(other, { "if-modified-since": earlier }, n)).status).toBe(200);
  });

  it("answers conditional reads of raw file contents, and Octokit sees the 304 as GitHub's", async () => {
    await gh.setConfig(REPO, "resume: false\n");
    const raw = await octokit.rest.repos.getContent({
      owner: "octo",
      repo: "widgets",
      path: ".github/tether.yml",
      mediaType: { format: "raw" },
    });
    const etag = String(raw.headers.etag);
    expect(
      await status(
        octokit.rest.repos.getContent({
          owner: "octo",
          repo: "widgets",
          path: ".github/tether.yml",
          mediaType: { format: "raw" },
          headers: { "if-none-match": etag },
        }),
      ),
    ).toBe(304);
    await gh.setConfig(REPO, null);
  });

  it("sends a push webhook after a commit when asked to, from the old head to the new", async () => {
    const pushes: Array<{ ref: string; before: string; after: string; repository: Json }> = [];
    gh.onPush = async (ev) => {
      pushes.push(ev.payload as never);
    };
    try {
      const before = await gh.sha(REPO, "main");
      const after = await gh.commit(REPO, { files: { "notes.md": "hi\n" } });
      expect(pushes).toHaveLength(1);
      expect(pushes[0]).toMatchObject({ ref: "refs/heads/main", before, after });
      expect(pushes[0]!.repository).toMatchObject({ full_name: REPO, default_branch: "main" });
    } finally {
      gh.onPush = undefined;
    }
  });
});

describe("pull request files and reviews, as GitHub answers them", () => {
  it("lists a pull request's files with their patch, and takes a review only on lines of the diff", async () => {
    const pr = await gh.addPullRequest({
      repo: REPO,
      headRef: "review-me",
      files: { "src/index.ts": "export {};\nexport const a = 1;\n", "NEW.md": "new\n" },
    });
    const pull_number = pr.number as number;
    const owner = "octo";
    const repo = "widgets";
    const { data: files } = await octokit.rest.pulls.listFiles({ owner, repo, pull_number });
    expect(files.map((f) => [f.filename, f.status, f.additions, f.deletions])).toEqual([
      ["NEW.md", "added", 1, 0],
      ["src/index.ts", "modified", 1, 0],
    ]);
    expect(files[1]!.patch).toBe("@@ -1 +1,2 @@\n export {};\n+export const a = 1;");
    const head = String((pr.head as Json).sha);
    // A line outside the diff: GitHub refuses the whole review.
    const refused = await octokit.rest.pulls
      .createReview({
        owner,
        repo,
        pull_number,
        commit_id: head,
        event: "COMMENT",
        body: "x",
        comments: [
          { path: "src/index.ts", line: 2, body: "fine" },
          { path: "README.md", line: 1, body: "not in the diff" },
        ],
      })
      .catch((e: { status: number; response: { data: unknown } }) => e);
    expect(refused).toMatchObject({
      status: 422,
      response: {
        data: { message: "Unprocessable Entity", errors: ["Line could not be resolved"] },
      },
    });
    expect(gh.reviewsOf(REPO, pull_number).reviews).toEqual([]);
    const { data: review } = await octokit.rest.pulls.createReview({
      owner,
      repo,
      pull_number,
      commit_id: head,
      event: "COMMENT",
      body: "Looks fine.",
      comments: [
        { path: "src/index.ts", line: 2, body: "```suggestion\nexport const a = 2;\n```" },
        { path: "src/index.ts", line: 1, side: "LEFT", body: "context on the base side" },
      ],
    });
    expect(review).toMatchObject({ state: "COMMENTED", body: "Looks fine.", commit_id: head });
    const { data: comments } = await octokit.rest.pulls.listReviewComments({
      owner,
      repo,
      pull_number,
    });
    expect(comments.map((c) => [c.path, c.line, c.side, c.pull_request_review_id])).toEqual([
      ["src/index.ts", 2, "RIGHT", review.id],
      ["src/index.ts", 1, "LEFT", review.id],
    ]);
  });
});

describe("credentials", () => {
  it("answers 401 with GitHub's bodies to missing, unknown, expired and revoked tokens", async () => {
    const anonymous = new Octokit({ baseUrl: gh.apiUrl, log: quiet });
    await expect(
      anonymous.rest.repos.get({ owner: "octo", repo: "widgets" }),
    ).rejects.toMatchObject({
      status: 401,
      message: expect.stringContaining("Requires authentication"),
    });
    const bogus = new Octokit({ auth: "ghs_notarealtoken", baseUrl: gh.apiUrl, log: quiet });
    await expect(bogus.rest.repos.get({ owner: "octo", repo: "widgets" })).rejects.toMatchObject({
      status: 401,
      message: expect.stringContaining("Bad credentials"),
    });
    const revoked = gh.createInstallationToken();
    gh.revokeToken(revoked);
    expect(
      await status(
        new Octokit({ auth: revoked, baseUrl: gh.apiUrl, log: quiet }).rest.repos.get({
          owner: "octo",
          repo: "widgets",
        }),
      ),
    ).toBe(401);
  });

  it("expires tokens, and limits them to the installation's (or the requested) repositories", async () => {
    const clock = { now: new Date("2030-01-01T00:00:00Z") };
    const local = await startFakeGitHub({ now: () => clock.now });
    try {
      await local.addRepo({ owner: "octo", name: "a" });
      await local.addRepo({ owner: "octo", name: "b" });
      await local.addRepo({ owner: "octo", name: "hidden", installationId: null });
      const all = new Octokit({
        auth: local.createInstallationToken(),
        baseUrl: local.apiUrl,
        log: quiet,
      });
      const onlyA = new Octokit({
        auth: local.createInstallationToken({ repositories: ["octo/a"] }),
        baseUrl: local.apiUrl,
        log: quiet,
      });
      expect(await status(all.rest.repos.get({ owner: "octo", repo: "b" }))).toBe(200);
      expect(await status(all.rest.repos.get({ owner: "octo", repo: "hidden" }))).toBe(404);
      expect(await status(onlyA.rest.repos.get({ owner: "octo", repo: "a" }))).toBe(200);
      expect(await status(onlyA.rest.repos.get({ owner: "octo", repo: "b" }))).toBe(404);
      clock.now = new Date("2030-01-01T01:00:01Z");
      expect(await status(all.rest.repos.get({ owner: "octo", repo: "a" }))).toBe(401);
    } finally {
      await local.close();
    }
  });
});

describe("failure injection", () => {
  it("fails the next matching requests with the given status, then serves again", async () => {
    gh.failNext({ method: "GET", path: "/api/v3/repos/octo/widgets" }, { status: 502, times: 2 });
    expect(await status(octokit.rest.repos.get({ owner: "octo", repo: "widgets" }))).toBe(502);
    expect(await status(octokit.rest.repos.get({ owner: "octo", repo: "widgets" }))).toBe(502);
    expect(await status(octokit.rest.repos.get({ owner: "octo", repo: "widgets" }))).toBe(200);
  });

  it("sends rate-limit answers the throttling plugin recognises", async () => {
    gh.failNext(
      { route: "POST /repos/{owner}/{repo}/issues/{issue_number}/comments" },
      rateLimited(7, 429),
    );
    const n = gh.addIssue({ repo: REPO }).number as number;
    const err = (await octokit.rest.issues
      .createComment({ owner: "octo", repo: "widgets", issue_number: n, body: "x" })
      .catch((e: unknown) => e)) as {
      status: number;
      response: { headers: Record<string, string> };
    };
    expect(err.status).toBe(429);
    expect(err.response.headers["x-ratelimit-remaining"]).toBe("0");
    expect(err.response.headers["retry-after"]).toBe("7");
    expect(gh.comments(REPO, n)).toEqual([]);
  });

  it("lets Probot's throttling plugin wait out a rate limit and succeed", async () => {
    const app = new Probot({
      appId: gh.appId,
      privateKey: gh.privateKeyPem,
      baseUrl: gh.apiUrl,
      log: silent,
      Octokit: ProbotOctokit.defaults({ retry: { enabled: false } }),
    });
    const kit = await app.auth(gh.installationId);
    // A read: the plugin also spaces writes (1 s) and comment posts (3 s), which would only
    // slow this test down.
    gh.failNext(
      { route: "GET /repos/{owner}/{repo}/issues/{issue_number}" },
      // Already reset, so the plugin retries at once.
      rateLimited(-2),
    );
    const n = gh.addIssue({ repo: REPO, title: "limited" }).number as number;
    const { data } = await kit.rest.issues.get({ owner: "octo", repo: "widgets", issue_number: n });
    expect(data.title).toBe("limited");
    const attempts = gh.requests.filter(
      (r) => r.method === "GET" && r.path.endsWith(`/issues/${n}`),
    );
    expect(attempts.map((r) => r.status)).toEqual([403, 200]);
  });
});

describe("webhooks", () => {
  it("delivers signed, example-shaped payloads a real Probot app accepts and acts on", async () => {
    await gh.setConfig(REPO, "mention: '@tether'\n");
    const seen: Json[] = [];
    const appFn = (app: Probot) => {
      app.on("issue_comment.created", async (context) => {
        const config = (await context.config("tether.yml")) as Json | null;
        seen.push(context.payload as unknown as Json);
        await context.octokit.rest.issues.createComment(
          context.issue({ body: `config says ${String(config?.mention)}` }),
        );
      });
    };
    const middleware = await createNodeMiddleware(appFn, {
      probot: probot(gh.privateKeyPem, "hook-secret"),
    });
    const server = http.createServer((req, res) => {
      void middleware(req, res, () => {
        res.writeHead(404);
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const n = gh.addIssue({ repo: REPO, user: "alice" }).number as number;
      const comment = gh.addComment({
        repo: REPO,
        issueNumber: n,
        body: "@tether go",
        user: "alice",
      });
      const event = gh.webhooks.issueComment({
        repo: REPO,
        issueNumber: n,
        commentId: comment.id as number,
      });
      expect(event.payload.installation?.id).toBe(gh.installationId);
      expect(event.payload.repository.full_name).toBe("octo/widgets");
      expect(event.payload.sender.login).toBe("alice");
      expect(event.payload.comment.body).toBe("@tether go");

      const bad = await signedWebhook(appUrl, "issue_comment", event.payload, "wrong-secret");
      expect(bad.status).toBe(400);
      const ok = await signedWebhook(appUrl, "issue_comment", event.payload, "hook-secret");
      expect(ok.status).toBe(200);
      for (let i = 0; i < 100 && gh.comments(REPO, n).length < 2; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(gh.comments(REPO, n).map((c) => c.body)).toEqual([
        "@tether go",
        "config says @tether",
      ]);
      expect(seen).toHaveLength(1);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await gh.setConfig(REPO, null);
    }
  });

  it("builds edited, pull-request and issue payloads from the current state", async () => {
    const pr = await gh.addPullRequest({ repo: REPO, headRef: "feature/x", user: "carol" });
    const c = gh.addComment({ repo: REPO, issueNumber: pr.number as number, body: "before" });
    gh.editComment(c.id as number, "after");
    const edited = gh.webhooks.issueComment({
      repo: REPO,
      issueNumber: pr.number as number,
      commentId: c.id as number,
      action: "edited",
      previousBody: "before",
    });
    expect(edited.payload.action).toBe("edited");
    expect(edited.payload.comment.body).toBe("after");
    expect((edited.payload as unknown as { changes: Json }).changes).toEqual({
      body: { from: "before" },
    });
    expect(edited.payload.issue.pull_request?.html_url).toBe(
      `${gh.url}/octo/widgets/pull/${pr.number}`,
    );

    const opened = gh.webhooks.pullRequest({ repo: REPO, number: pr.number as number });
    expect(opened.payload.pull_request.head.ref).toBe("feature/x");
    expect(opened.payload.pull_request.head.sha).toBe(await gh.sha(REPO, "feature/x"));

    const issue = gh.webhooks.issues({
      repo: REPO,
      issueNumber: pr.number as number,
      action: "opened",
    });
    expect(issue.payload.issue.number).toBe(pr.number);
    expect(issue.payload.sender.login).toBe("carol");
  });
});

describe("the app's webhook delivery log", () => {
  it("records what it delivers (0 when nothing answers), lists it newest first with cursor paging, and redelivers with the app's JWT only", async () => {
    const received: Array<{ guid: string; signature: string; body: string }> = [];
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        received.push({
          guid: String(req.headers["x-github-delivery"]),
          signature: String(req.headers["x-hub-signature-256"]),
          body,
        });
        res.writeHead(received.length === 1 ? 500 : 200);
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/github/webhooks`;
    try {
      const n = gh.addIssue({ repo: REPO, user: "alice" }).number as number;
      const c = gh.addComment({ repo: REPO, issueNumber: n, body: "@tether go", user: "alice" });
      const ev = gh.webhooks.issueComment({
        repo: REPO,
        issueNumber: n,
        commentId: c.id as number,
      });
      const first = await gh.deliver(url, ev.name, ev.payload, "hook-secret");
      expect(first.status).toBe(500);
      const refused = await gh.deliver("http://127.0.0.1:1/", ev.name, ev.payload, "hook-secret");
      expect(refused.status).toBe(0);
      const older = [1, 2, 3].map((i) =>
        gh.deliveryLog.record({ statusCode: 200, at: new Date(Date.now() - i * 60_000) }),
      );

      const app = await probot().auth();
      const page1 = await app.rest.apps.listWebhookDeliveries({ per_page: 2 });
      expect(page1.data.map((d) => d.guid)).toEqual([refused.deliveryId, first.deliveryId]);
      expect(page1.data[1]).toMatchObject({
        id: first.attempt.id,
        redelivery: false,
        status_code: 500,
        status: "Invalid HTTP Response: 500",
        event: "issue_comment",
        action: "created",
        installation_id: gh.installationId,
      });
      expect(page1.data[0]).toMatchObject({ status_code: 0 });
      const next = /<([^>]+)>; rel="next"/.exec(page1.headers.link ?? "")?.[1];
      const cursor = new URL(next!).searchParams.get("cursor")!;
      const page2 = await app.rest.apps.listWebhookDeliveries({ per_page: 2, cursor });
      expect(page2.data.map((d) => d.guid)).toEqual([older[0]!.guid, older[1]!.guid]);
      const page3 = await app.rest.apps.listWebhookDeliveries({
        per_page: 2,
        cursor: new URL(
          /<([^>]+)>; rel="next"/.exec(page2.headers.link ?? "")![1]!,
        ).searchParams.get("cursor")!,
      });
      expect(page3.data.map((d) => d.guid)).toEqual([older[2]!.guid]);
      expect(page3.headers.link).toBeUndefined();

      // An installation token is not the app: 401 on both routes.
      expect(await status(octokit.rest.apps.listWebhookDeliveries())).toBe(401);
      expect(
        await status(octokit.rest.apps.redeliverWebhookDelivery({ delivery_id: first.attempt.id })),
      ).toBe(401);
      expect(await status(app.rest.apps.redeliverWebhookDelivery({ delivery_id: 12345 }))).toBe(
        404,
      );

      const asked = await app.rest.apps.redeliverWebhookDelivery({
        delivery_id: first.attempt.id,
      });
      expect(asked.status).toBe(202);
      await gh.deliveryLog.settled();
      expect(received).toHaveLength(2);
      expect(received[1]).toEqual(received[0]);
      expect(received[1]!.guid).toBe(first.deliveryId);
      expect(gh.deliveryLog.of(first.deliveryId).map((a) => [a.redelivery, a.statusCode])).toEqual([
        [false, 500],
        [true, 200],
      ]);
      const newest = (await app.rest.apps.listWebhookDeliveries({ per_page: 1 })).data[0];
      expect(newest).toMatchObject({ guid: first.deliveryId, redelivery: true, status: "OK" });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("git over smart HTTP", () => {
  const gitEnv = () => ({
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: scratch,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    LC_ALL: "C",
  });
  const authUrl = (t: string) => `http://x-access-token:${t}@${gh.host}/octo/widgets.git`;

  it("clones with an installation token and records which token each request used", async () => {
    const t = gh.createInstallationToken();
    const dest = path.join(scratch, "clone-ok");
    const before = gh.requests.length;
    await execa("git", ["clone", "--quiet", authUrl(t), dest], { env: gitEnv(), extendEnv: false });
    expect(await fs.readFile(path.join(dest, "README.md"), "utf8")).toBe("# widgets\n");
    const gitRequests = gh.requests.slice(before).filter((r) => r.kind === "git");
    const authed = gitRequests.filter((r) => r.status === 200);
    expect(authed.length).toBeGreaterThanOrEqual(2); // info/refs + upload-pack
    expect(authed.every((r) => r.token === t)).toBe(true);
  });

  it("refuses git without a token (401, WWW-Authenticate) and with an invalid one", async () => {
    const none = await execa(
      "git",
      ["clone", "--quiet", `http://${gh.host}/octo/widgets.git`, path.join(scratch, "no-token")],
      { env: gitEnv(), extendEnv: false, reject: false },
    );
    expect(none.exitCode).not.toBe(0);
    expect(none.stderr).toMatch(/could not read Username/);
    const res = await fetch(`${gh.url}/octo/widgets.git/info/refs?service=git-upload-pack`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic/);

    const bad = await execa(
      "git",
      ["clone", "--quiet", authUrl("ghs_bogus"), path.join(scratch, "bad")],
      {
        env: gitEnv(),
        extendEnv: false,
        reject: false,
      },
    );
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toMatch(/Authentication failed/);
  });

  it("answers 404 for a repository the token cannot see", async () => {
    const r = await execa(
      "git",
      [
        "clone",
        "--quiet",
        `http://x-access-token:${gh.createInstallationToken()}@${gh.host}/octo/missing.git`,
        path.join(scratch, "missing"),
      ],
      { env: gitEnv(), extendEnv: false, reject: false },
    );
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/not found/);
  });

  it("handles gzip-encoded upload-pack requests (many wants)", async () => {
    await gh.addRepo({ owner: "octo", name: "branchy" });
    const bare = gh.barePath("octo/branchy");
    // 60 branches with distinct tips: the clone's want list passes git's 1 KB gzip threshold.
    let stream = "";
    for (let i = 0; i < 60; i++) {
      const msg = `b${i}`;
      stream += `commit refs/heads/b${i}\ncommitter A <a@b> 1700000000 +0000\ndata ${msg.length}\n${msg}\nfrom refs/heads/main^0\nM 100644 inline f${i}.txt\ndata 2\n${i % 10}\n\n`;
    }
    await execa("git", ["fast-import", "--quiet"], {
      cwd: bare,
      input: stream,
      env: gitEnv(),
      extendEnv: false,
    });
    const before = gh.requests.length;
    const dest = path.join(scratch, "branchy");
    const t = gh.createInstallationToken();
    await execa(
      "git",
      [
        "clone",
        "--quiet",
        "--mirror",
        `http://x-access-token:${t}@${gh.host}/octo/branchy.git`,
        dest,
      ],
      {
        env: gitEnv(),
        extendEnv: false,
      },
    );
    const posts = gh.requests.slice(before).filter((r) => r.kind === "git" && r.method === "POST");
    expect(posts.some((r) => r.headers["content-encoding"] === "gzip")).toBe(true);
    const { stdout } = await execa(
      "git",
      ["for-each-ref", "--count=100", "--format=%(refname)", "refs/heads/"],
      {
        cwd: dest,
        env: gitEnv(),
        extendEnv: false,
      },
    );
    expect(stdout.split("\n")).toHaveLength(61);
  });

  it("accepts pushes (receive-pack) only with a token for this repository alone with contents: write, records them, and fetches refs/pull/<n>/head", async () => {
    const t = gh.createInstallationToken();
    const dest = path.join(scratch, "push");
    const env = {
      ...gitEnv(),
      GIT_AUTHOR_NAME: "A",
      GIT_AUTHOR_EMAIL: "a@b",
      GIT_COMMITTER_NAME: "A",
      GIT_COMMITTER_EMAIL: "a@b",
    };
    const git = (...args: string[]) =>
      execa("git", args, { cwd: dest, env, extendEnv: false, reject: false });
    await execa("git", ["clone", "--quiet", authUrl(t), dest], { env, extendEnv: false });
    await fs.writeFile(path.join(dest, "new.txt"), "new\n");
    await git("add", "new.txt");
    await git("commit", "--quiet", "-m", "new");
    // The installation's own token reads everything but may not push: too wide.
    const wide = await git("push", "--quiet", "origin", "HEAD:refs/heads/pushed");
    expect(wide.exitCode).not.toBe(0);
    expect(wide.stderr).toContain("token minted for this repository alone with contents: write");
    const scoped = gh.createInstallationToken({
      repositories: [REPO],
      permissions: { contents: "write", metadata: "read" },
    });
    const url = authUrl(scoped);
    const pushed = await git("push", "--quiet", url, "HEAD:refs/heads/pushed");
    expect(pushed.stderr).toBe("");
    expect(pushed.exitCode).toBe(0);
    const { stdout: local } = await execa("git", ["rev-parse", "HEAD"], {
      cwd: dest,
      env,
      extendEnv: false,
    });
    expect(gh.pushesTo(REPO, "pushed")).toEqual([
      expect.objectContaining({
        before: null,
        after: local.trim(),
        token: scoped,
        repositories: [REPO],
        permissions: { contents: "write", metadata: "read" },
      }),
    ]);

    // GitHub's own refusals: a protected branch, and workflows without that permission.
    gh.protectBranch(REPO, "guarded");
    const guarded = await git("push", "--quiet", url, "HEAD:refs/heads/guarded");
    expect(guarded.exitCode).not.toBe(0);
    expect(guarded.stderr).toContain("GH006: Protected branch update failed");
    await fs.mkdir(path.join(dest, ".github/workflows"), { recursive: true });
    await fs.writeFile(path.join(dest, ".github/workflows/ci.yml"), "on: push\n");
    await git("add", ".");
    await git("commit", "--quiet", "-m", "ci");
    const workflow = await git("push", "--quiet", url, "HEAD:refs/heads/ci");
    expect(workflow.exitCode).not.toBe(0);
    expect(workflow.stderr).toContain("without workflows permission");
    expect(await gh.sha(REPO, "ci")).toBeUndefined();
    expect(await gh.sha(REPO, "pushed")).toBe(local.trim());

    const pr = await gh.addPullRequest({ repo: REPO, headRef: "pr-fetch" });
    await execa("git", ["fetch", "--quiet", "origin", `refs/pull/${pr.number}/head`], {
      cwd: dest,
      env,
      extendEnv: false,
    });
    const { stdout: fetched } = await execa("git", ["rev-parse", "FETCH_HEAD"], {
      cwd: dest,
      env,
      extendEnv: false,
    });
    expect(fetched.trim()).toBe(await gh.sha(REPO, "pr-fetch"));
  });
});
