import { describe, expect, it } from "vitest";
import {
  allInBody,
  commentableLines,
  planReview,
  readToolOutput,
  type LineComment,
} from "../../src/review/review-plan.js";

// Old lines 1-3 and 10-12 become new lines 1-4 and 11-13 (a line added at 2, one removed at 11).
const PATCH = [
  "@@ -1,3 +1,4 @@",
  " a",
  "+added",
  " b",
  " c",
  "@@ -10,3 +11,2 @@ function f() {",
  " x",
  "-gone",
  " y",
  "\\ No newline at end of file",
].join("\n");

describe("commentableLines", () => {
  it.each([
    { patch: PATCH, right: [1, 2, 3, 4, 11, 12], left: [1, 2, 3, 10, 11, 12] },
    { patch: "@@ -0,0 +1,2 @@\n+one\n+two", right: [1, 2], left: [] },
    { patch: "@@ -1,2 +0,0 @@\n-one\n-two", right: [], left: [1, 2] },
    { patch: "@@ -5 +5 @@\n-old\n+new", right: [5], left: [5] },
    { patch: undefined, right: [], left: [] },
    { patch: "Binary files differ", right: [], left: [] },
  ])("$patch", ({ patch, right, left }) => {
    const l = commentableLines(patch);
    expect([...l.RIGHT].sort((a, b) => a - b)).toEqual(right);
    expect([...l.LEFT].sort((a, b) => a - b)).toEqual(left);
  });
});

const c = (o: Partial<LineComment>): LineComment => ({
  kind: "comment",
  path: "src/a.js",
  line: 2,
  side: "RIGHT",
  body: "note",
  ...o,
});

describe("planReview", () => {
  const files = [{ filename: "src/a.js", patch: PATCH }, { filename: "img.png" }];
  it.each([
    { name: "an added line", comment: c({}), lands: true },
    { name: "a context line", comment: c({ line: 11 }), lands: true },
    { name: "a line outside every hunk", comment: c({ line: 7 }), lands: false },
    { name: "a removed line on the LEFT", comment: c({ line: 11, side: "LEFT" }), lands: true },
    { name: "an added line on the LEFT", comment: c({ line: 2, side: "LEFT" }), lands: true },
    { name: "a new-only line on the LEFT", comment: c({ line: 4, side: "LEFT" }), lands: false },
    { name: "a range inside a hunk", comment: c({ start_line: 1, line: 4 }), lands: true },
    { name: "a range across hunks", comment: c({ start_line: 4, line: 11 }), lands: false },
    { name: "a file not in the diff", comment: c({ path: "other.js" }), lands: false },
    { name: "a file without a patch", comment: c({ path: "img.png", line: 1 }), lands: false },
  ])("$name: on the diff = $lands", ({ comment, lands }) => {
    const plan = planReview({ comments: [comment], requestChanges: null }, files, false);
    expect(plan.event).toBe("COMMENT");
    expect(plan.comments.length).toBe(lands ? 1 : 0);
    expect(plan.outside.length).toBe(lands ? 0 : 1);
    if (lands) expect(plan.body).toBe("");
    else expect(plan.body).toContain(`\`${comment.path}:`);
  });

  it("keeps a range's start and side, and puts the rest in the body as path:line", () => {
    const plan = planReview(
      {
        comments: [
          c({ start_line: 1, line: 2, body: "```suggestion\nA\nB\n```" }),
          c({ line: 40, body: "Also here." }),
        ],
        requestChanges: null,
      },
      files,
      false,
    );
    expect(plan.comments).toEqual([
      {
        path: "src/a.js",
        line: 2,
        side: "RIGHT",
        start_line: 1,
        start_side: "RIGHT",
        body: "```suggestion\nA\nB\n```",
      },
    ]);
    expect(plan.body).toBe(
      "A comment on a line outside this pull request's diff:\n\n**`src/a.js:40`**\n\nAlso here.",
    );
  });

  it.each([
    { asked: "broken", allowed: true, event: "REQUEST_CHANGES" },
    { asked: "broken", allowed: false, event: "COMMENT" },
    { asked: null, allowed: true, event: "COMMENT" },
  ])("request changes: asked $asked, allowed $allowed → $event", ({ asked, allowed, event }) => {
    const plan = planReview({ comments: [c({})], requestChanges: asked }, files, allowed);
    expect(plan.event).toBe(event);
    expect(plan.body.includes("Changes requested")).toBe(event === "REQUEST_CHANGES");
  });

  it("allInBody moves every comment into the body", () => {
    const req = { comments: [c({}), c({ line: 40 })], requestChanges: null };
    const plan = allInBody(planReview(req, files, false), req);
    expect(plan.comments).toEqual([]);
    expect(plan.body).toContain("`src/a.js:2`");
    expect(plan.body).toContain("`src/a.js:40`");
  });
});

describe("readToolOutput", () => {
  it("keeps valid comments, skips and counts anything else", () => {
    const text = [
      JSON.stringify(c({})),
      "not json",
      JSON.stringify({ kind: "comment", path: "a", line: 0, body: "x" }),
      JSON.stringify({ kind: "comment", path: "a", line: 3, start_line: 3, body: "x" }),
      JSON.stringify({ kind: "request_changes", reason: "tests fail" }),
      JSON.stringify({ kind: "approve" }),
      "",
    ].join("\n");
    const r = readToolOutput(text);
    expect(r.comments).toEqual([c({})]);
    expect(r.requestChanges).toBe("tests fail");
    expect(r.skipped).toBe(4);
  });

  it("reads at most 50 comments", () => {
    const text = Array.from({ length: 60 }, (_, i) => JSON.stringify(c({ line: i + 1 }))).join(
      "\n",
    );
    const r = readToolOutput(text);
    expect(r.comments).toHaveLength(50);
    expect(r.skipped).toBe(10);
  });
});
