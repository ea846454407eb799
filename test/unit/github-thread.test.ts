/** githubThread's review discussion over nock: the REST shapes mapped once, paginated, bounded. */
import nock from "nock";
import { describe, expect, it } from "vitest";
import { githubThread, REVIEW_FETCH_CAP } from "../../src/runner/wiring/github-thread.js";
import { API, rest, takeNockOpenapiViolations, useNock } from "../helpers/intake-github.js";
import { TestOctokit } from "../helpers/probot.js";

useNock();

const base = "/repos/octo/widgets/pulls/8";
const thread = () =>
  githubThread({
    octokit: new TestOctokit({ auth: "ghs_test" }),
    repo: "octo/widgets",
    cloneUrl: "https://github.com/octo/widgets.git",
    loadConfig: async () => ({ ok: false, message: "unused" }),
  });

function lineComment(id: number, over: Record<string, unknown> = {}) {
  return {
    ...rest.reviewComment("octo/widgets", { id, pullNumber: 8, user: "dora" }),
    id,
    html_url: `https://github.com/octo/widgets/pull/8#discussion_r${id}`,
    body: `note ${id}`,
    created_at: `2026-11-20T12:00:${String(id % 60).padStart(2, "0")}Z`,
    path: "src/split.js",
    line: 3,
    start_line: null,
    original_line: 3,
    original_start_line: null,
    side: "RIGHT",
    subject_type: "line",
    commit_id: "0123abc0123abc",
    original_commit_id: "0123abc0123abc",
    ...over,
  };
}

function review(id: number, state: string, body: string | null) {
  const html = `https://github.com/octo/widgets/pull/8#pullrequestreview-${id}`;
  return {
    id,
    node_id: `PRR_${id}`,
    user: rest.user("erin"),
    pull_request_url: `${API}/repos/octo/widgets/pulls/8`,
    author_association: "COLLABORATOR",
    _links: { html: { href: html }, pull_request: { href: `${API}/repos/octo/widgets/pulls/8` } },
    html_url: html,
    body,
    state,
    submitted_at: "2026-11-20T13:00:00Z",
    commit_id: "0123abc0123abc",
  };
}

const next = (path: string, page: number) => ({
  link: `<${API}${path}?page=${page}>; rel="next"`,
});

describe("githubThread.listReviewDiscussion", () => {
  it("reads every page newest first, maps the fields once, and gives the comments oldest first", async () => {
    nock(API)
      .get(`${base}/comments`)
      .query({ per_page: "100", sort: "created", direction: "desc" })
      .reply(
        200,
        [
          lineComment(3, {
            line: null,
            original_line: 9,
            original_start_line: 7,
            side: "LEFT",
            user: null,
          }),
        ],
        next(`${base}/comments`, 2),
      )
      .get(`${base}/comments`)
      .query({ page: "2" })
      .reply(200, [lineComment(2, { subject_type: "file", line: null, body: null })]);
    nock(API)
      .get(`${base}/reviews`)
      .query({ per_page: "100" })
      .reply(200, [
        review(10, "CHANGES_REQUESTED", "Needs a CRLF test."),
        review(11, "COMMENTED", ""),
        review(12, "PENDING", "a draft nobody else sees"),
        review(13, "APPROVED", null),
      ]);

    const d = await thread().listReviewDiscussion!(8);
    // On purpose outside GitHub's description, which calls line and body always there: GitHub
    // does send a null line (an outdated comment) and Tether copes with a null body too.
    expect(takeNockOpenapiViolations().sort()).toEqual([
      expect.stringMatching(/pulls\/8\/comments 200 .*body\/0\/body must be string$/),
      expect.stringMatching(/pulls\/8\/comments 200 .*body\/0\/line must be integer$/),
      expect.stringMatching(/pulls\/8\/comments 200 .*body\/0\/line must be integer$/),
      expect.stringMatching(/pulls\/8\/reviews 200 .*body\/3\/body must be string$/),
    ]);
    expect(d.truncated).toBe(false);
    expect(d.comments.map((c) => c.id)).toEqual([2, 3]);
    expect(d.comments[0]).toEqual({
      id: 2,
      author: "dora",
      url: "https://github.com/octo/widgets/pull/8#discussion_r2",
      body: "",
      createdAt: "2026-11-20T12:00:02Z",
      place: {
        path: "src/split.js",
        subject: "file",
        line: null,
        startLine: null,
        originalLine: 3,
        originalStartLine: null,
        side: "RIGHT",
        commitId: "0123abc0123abc",
        originalCommitId: "0123abc0123abc",
      },
    });
    expect(d.comments[1]).toMatchObject({
      author: "ghost",
      place: { line: null, originalLine: 9, originalStartLine: 7, side: "LEFT", subject: "line" },
    });
    expect(d.reviews).toEqual([
      {
        id: 10,
        author: "erin",
        url: "https://github.com/octo/widgets/pull/8#pullrequestreview-10",
        body: "Needs a CRLF test.",
        createdAt: "2026-11-20T13:00:00Z",
        state: "changes_requested",
        commitId: "0123abc0123abc",
      },
    ]);
  });

  it(`stops after ${REVIEW_FETCH_CAP} line comments and says older ones went unread`, async () => {
    const pages = Math.ceil(REVIEW_FETCH_CAP / 100);
    const api = nock(API);
    for (let p = 1; p <= pages; p++) {
      const items = Array.from({ length: 100 }, (_, i) => lineComment(100_000 - (p - 1) * 100 - i));
      // Every page says there is another: the listing must stop on its own.
      api
        .get(`${base}/comments`)
        .query(true)
        .reply(200, items, next(`${base}/comments`, p + 1));
    }
    api.get(`${base}/reviews`).query(true).reply(200, []);

    const d = await thread().listReviewDiscussion!(8);
    expect(d.comments).toHaveLength(REVIEW_FETCH_CAP);
    expect(d.truncated).toBe(true);
    // Newest kept; handed over oldest first.
    expect(d.comments.at(-1)?.id).toBe(100_000);
    expect(d.comments[0]?.id).toBe(100_000 - REVIEW_FETCH_CAP + 1);
  });
});

describe("githubThread.branchHead", () => {
  it("gives the branch's commit, null for a missing branch or one GitHub renamed, and throws on other errors", async () => {
    const sha = "a".repeat(40);
    nock(API)
      .get("/repos/octo/widgets/branches/main")
      .reply(200, rest.branch("octo/widgets", "main", sha))
      .get("/repos/octo/widgets/branches/gone")
      .reply(404, { message: "Branch not found" })
      // What a renamed branch's redirect ends at: the branch under its new name.
      .get("/repos/octo/widgets/branches/old")
      .reply(200, rest.branch("octo/widgets", "new", sha))
      .get("/repos/octo/widgets/branches/flaky")
      .reply(500, { message: "boom" });
    const t = thread();
    expect(await t.branchHead!("main")).toBe(sha);
    expect(await t.branchHead!("gone")).toBeNull();
    expect(await t.branchHead!("old")).toBeNull();
    await expect(t.branchHead!("flaky")).rejects.toMatchObject({ status: 500 });
  });
});
