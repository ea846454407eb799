/** The review after a pull request turn, over nock: files read page by page, one review posted. */
import nock from "nock";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { githubThread } from "../../src/runner/wiring/github-thread.js";
import { postReview, renderReviewLine } from "../../src/runner/turn/review-step.js";
import type { LineComment } from "../../src/review/review-plan.js";
import { API, useNock } from "../helpers/intake-github.js";
import { TestOctokit } from "../helpers/probot.js";

useNock();

const base = "/repos/octo/widgets/pulls/8";
const HEAD = "a".repeat(40);
const gh = () =>
  githubThread({
    octokit: new TestOctokit({ auth: "ghs_test" }),
    repo: "octo/widgets",
    cloneUrl: "https://github.com/octo/widgets.git",
    loadConfig: async () => ({ ok: false, message: "unused" }),
  });
const file = (filename: string, patch?: string) => ({
  sha: "b".repeat(40),
  filename,
  status: "modified",
  additions: 1,
  deletions: 1,
  changes: 2,
  blob_url: `https://github.com/octo/widgets/blob/${HEAD}/${filename}`,
  raw_url: `https://github.com/octo/widgets/raw/${HEAD}/${filename}`,
  contents_url: `${API}/repos/octo/widgets/contents/${filename}?ref=${HEAD}`,
  ...(patch ? { patch } : {}),
});
const comment = (o: Partial<LineComment>): LineComment => ({
  kind: "comment",
  path: "src/split.js",
  line: 1,
  side: "RIGHT",
  body: "```suggestion\nfixed\n```",
  ...o,
});
/** POST /pulls/{n}/reviews's answer, every field GitHub's description requires. */
const reviewReply = (id: number) => {
  const html = `https://github.com/octo/widgets/pull/8#pullrequestreview-${id}`;
  const pull = `${API}/repos/octo/widgets/pulls/8`;
  return {
    id,
    node_id: `PRR_${id}`,
    user: {
      login: "tether[bot]",
      id: 9,
      node_id: "BOT_9",
      avatar_url: "https://avatars.githubusercontent.com/u/9",
      gravatar_id: "",
      url: `${API}/users/tether%5Bbot%5D`,
      html_url: "https://github.com/apps/tether",
      followers_url: `${API}/users/tether%5Bbot%5D/followers`,
      following_url: `${API}/users/tether%5Bbot%5D/following{/other_user}`,
      gists_url: `${API}/users/tether%5Bbot%5D/gists{/gist_id}`,
      starred_url: `${API}/users/tether%5Bbot%5D/starred{/owner}{/repo}`,
      subscriptions_url: `${API}/users/tether%5Bbot%5D/subscriptions`,
      organizations_url: `${API}/users/tether%5Bbot%5D/orgs`,
      repos_url: `${API}/users/tether%5Bbot%5D/repos`,
      events_url: `${API}/users/tether%5Bbot%5D/events{/privacy}`,
      received_events_url: `${API}/users/tether%5Bbot%5D/received_events`,
      type: "Bot",
      site_admin: false,
    },
    body: "",
    state: "COMMENTED",
    html_url: html,
    pull_request_url: pull,
    _links: { html: { href: html }, pull_request: { href: pull } },
    submitted_at: "2026-11-27T12:00:00Z",
    commit_id: HEAD,
    author_association: "NONE",
  };
};
const run = (comments: LineComment[], o: { changes?: string; allow?: boolean } = {}) =>
  postReview({
    gh: gh(),
    pullNumber: 8,
    commitId: HEAD,
    review: { comments, requestChanges: o.changes ?? null },
    allowChanges: o.allow ?? false,
    scrub: (s) => s.replace("ghs_secret", "***"),
    log: pino({ level: "silent" }),
  });

/** The files: src/split.js line 1 changed (page 1), docs/a.md added (page 2). */
function files() {
  nock(API)
    .get(`${base}/files`)
    .query({ per_page: "100" })
    .reply(200, [file("src/split.js", "@@ -1 +1 @@\n-old\n+new")], {
      link: `<${API}${base}/files?per_page=100&page=2>; rel="next"`,
    })
    .get(`${base}/files`)
    .query({ per_page: "100", page: "2" })
    .reply(200, [file("docs/a.md", "@@ -0,0 +1,2 @@\n+a\n+b")]);
}

describe("postReview", () => {
  it("posts one COMMENT review: comments on the diff on their lines, the rest in the body", async () => {
    files();
    let sent: Record<string, unknown> = {};
    nock(API)
      .post(`${base}/reviews`, (b) => ((sent = b), true))
      .reply(200, reviewReply(55));
    const out = await run([
      comment({}),
      comment({ path: "docs/a.md", line: 2, body: "page two, ghs_secret" }),
      comment({ path: "README.md", line: 3, body: "not in the diff" }),
    ]);
    expect(out).toEqual({
      kind: "posted",
      url: "https://github.com/octo/widgets/pull/8#pullrequestreview-55",
      onLines: 2,
      inBody: 1,
      event: "COMMENT",
    });
    expect(sent).toEqual({
      commit_id: HEAD,
      event: "COMMENT",
      body: "A comment on a line outside this pull request's diff:\n\n**`README.md:3`**\n\nnot in the diff",
      comments: [
        { path: "src/split.js", line: 1, side: "RIGHT", body: "```suggestion\nfixed\n```" },
        { path: "docs/a.md", line: 2, side: "RIGHT", body: "page two, ***" },
      ],
    });
    expect(renderReviewLine(out!)).toBe(
      "📝 Review posted with 3 comments (2 on the diff, 1 in its body (outside the diff)): https://github.com/octo/widgets/pull/8#pullrequestreview-55",
    );
  });

  it("a path outside the diff goes into the body scrubbed, and on one line of its code span", async () => {
    files();
    let sent: Record<string, unknown> = {};
    nock(API)
      .post(`${base}/reviews`, (b) => ((sent = b), true))
      .reply(200, reviewReply(58));
    // The path is the agent's word as much as the body: a secret in it, or a blank line that
    // ends the code span and lets the rest of it be markdown (a mention, a link), is its own.
    await run([
      comment({ path: "docs/ghs_secret.md", line: 3, body: "b" }),
      comment({ path: "x.md\n\n@octocat [see](https://evil.invalid)\r\u2028y", body: "c" }),
    ]);
    expect(sent.body).toBe(
      [
        "Comments on lines outside this pull request's diff:",
        "**`docs/***.md:3`**",
        "b",
        "**`x.md @octocat [see](https://evil.invalid) y:1`**",
        "c",
      ].join("\n\n"),
    );
  });

  it("a 422 (the diff moved) posts it once more with every comment in the body", async () => {
    files();
    const bodies: Array<Record<string, unknown>> = [];
    nock(API)
      .post(`${base}/reviews`, (b) => (bodies.push(b), true))
      .reply(422, {
        message: "Unprocessable Entity",
        errors: ["Line could not be resolved"],
        documentation_url:
          "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
        status: "422",
      })
      .post(`${base}/reviews`, (b) => (bodies.push(b), true))
      .reply(200, reviewReply(56));
    const out = await run([comment({})]);
    expect(out).toMatchObject({ kind: "posted", onLines: 0, inBody: 1 });
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toMatchObject({ comments: [] });
    expect(String(bodies[1]!.body)).toContain("**`src/split.js:1`**\n\n```suggestion");
  });

  it("another failure is reported, not retried, and never thrown", async () => {
    files();
    nock(API).post(`${base}/reviews`).reply(403, { message: "Resource not accessible" });
    const out = await run([comment({})]);
    expect(out).toMatchObject({ kind: "failed" });
    expect(renderReviewLine(out!)).toContain("could not be posted as a review");
  });

  it.each([
    { allow: true, event: "REQUEST_CHANGES" },
    { allow: false, event: "COMMENT" },
  ])("asked to request changes, allowed $allow: $event", async ({ allow, event }) => {
    files();
    let sent: Record<string, unknown> = {};
    nock(API)
      .post(`${base}/reviews`, (b) => ((sent = b), true))
      .reply(200, reviewReply(57));
    await run([comment({})], { changes: "the tests fail", allow });
    expect(sent.event).toBe(event);
  });

  it("nothing asked: no request at all", async () => {
    expect(await run([])).toBeNull();
    expect(await run([], { changes: "x", allow: false })).toBeNull();
  });
});
