import { describe, expect, it } from "vitest";
import type {
  ReviewCommentPlace,
  ReviewDiscussion,
  ReviewLineComment,
  ReviewSummary,
} from "../../src/runner/ports.js";
import { reviewContext } from "../../src/runner/render/review-context.js";

const place: ReviewCommentPlace = {
  path: "src/split.js",
  subject: "line",
  line: 3,
  startLine: null,
  originalLine: 3,
  originalStartLine: null,
  side: "RIGHT",
  commitId: "0123abc",
  originalCommitId: "0123abc",
};

const lc = (id: number, at: string, over: Partial<ReviewLineComment> = {}): ReviewLineComment => ({
  id,
  author: "dora",
  url: `https://github.com/o/r/pull/8#discussion_r${id}`,
  body: `note ${id}`,
  createdAt: at,
  place,
  ...over,
});
const rv = (id: number, at: string, over: Partial<ReviewSummary> = {}): ReviewSummary => ({
  id,
  author: "erin",
  url: `https://github.com/o/r/pull/8#pullrequestreview-${id}`,
  body: `review ${id}`,
  createdAt: at,
  state: "changes_requested",
  commitId: "0123abc",
  ...over,
});
const discussion = (o: Partial<ReviewDiscussion>): ReviewDiscussion => ({
  comments: [],
  reviews: [],
  truncated: false,
  ...o,
});

describe("reviewContext", () => {
  it("merges line comments and review bodies oldest first, each with intake's location note", () => {
    const ctx = reviewContext(
      discussion({
        comments: [lc(1, "2026-11-20T12:00:00Z"), lc(3, "2026-11-20T12:02:00Z")],
        reviews: [rv(2, "2026-11-20T12:01:00Z")],
      }),
      new Set(),
    );
    expect(ctx.items.map((i) => i.body)).toEqual(["note 1", "review 2", "note 3"]);
    expect(ctx.items[0]).toMatchObject({
      kind: "review-comment",
      location:
        "[Review comment on `src/split.js`, line 3 of the pull request's version (the right side of the diff) at commit 0123abc.]",
    });
    expect(ctx.items[1]).toMatchObject({
      kind: "review",
      location: "[Pull request review (changes requested) at commit 0123abc.]",
    });
    expect(ctx.unread).toBe(false);
  });

  const rows: Array<[string, ReviewDiscussion, Set<string>, string[]]> = [
    [
      "this turn's own review comment is the request, not context",
      discussion({ comments: [lc(1, "2026-11-20T12:00:00Z"), lc(2, "2026-11-20T12:01:00Z")] }),
      new Set(["https://github.com/o/r/pull/8#discussion_r2"]),
      ["note 1"],
    ],
    [
      "this turn's own review body is the request, not context",
      discussion({ reviews: [rv(5, "2026-11-20T12:00:00Z"), rv(6, "2026-11-20T12:01:00Z")] }),
      new Set(["https://github.com/o/r/pull/8#pullrequestreview-5"]),
      ["review 6"],
    ],
    [
      "a review with only whitespace in its body says nothing",
      discussion({ reviews: [rv(5, "2026-11-20T12:00:00Z", { body: " \n" })] }),
      new Set(),
      [],
    ],
    [
      "Tether's own in-progress comment is dropped",
      discussion({
        comments: [
          lc(1, "2026-11-20T12:00:00Z", { body: "⏳ working <!-- tether:task:4 -->" }),
          lc(2, "2026-11-20T12:01:00Z"),
        ],
      }),
      new Set(),
      ["note 2"],
    ],
    [
      "an unparseable time sorts first instead of scrambling the rest",
      discussion({
        comments: [
          lc(1, "2026-11-20T12:05:00Z"),
          lc(2, "not a time"),
          lc(3, "2026-11-20T12:01:00Z"),
        ],
      }),
      new Set(),
      ["note 2", "note 3", "note 1"],
    ],
  ];
  it.each(rows)("%s", (_name, d, asked, bodies) => {
    const skip = (c: { body: string }) => c.body.startsWith("⏳");
    expect(reviewContext(d, asked, skip).items.map((i) => i.body)).toEqual(bodies);
  });

  it("passes on that older comments went unread", () => {
    expect(reviewContext(discussion({ truncated: true }), new Set()).unread).toBe(true);
  });
});
