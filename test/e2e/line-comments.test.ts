/**
 * Issue 29's line comments end to end: a review turn on a pull request, with the built app, real
 * Postgres, the real CLI in its sandbox calling Tether's line-comment tool (an MCP server in the
 * sandbox) because the fake model API scripts the call, and the GitHub stand-in computing the
 * diff and refusing (422) a review line outside it. One review is posted: the suggestion on a
 * changed line, the out-of-diff remark in its body. For Claude and for Codex.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { answerOf } from "../helpers/e2e-thread.js";
import { fileStack, REPO } from "../helpers/e2e-stack.js";
import { replies } from "../helpers/fake-anthropic.js";
import { replies as codexReplies } from "../helpers/fake-openai.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
  codex:
    cli: codex
    model: gpt-5.5
`;

const { stack, openai } = await fileStack({
  config: CONFIG,
  openai: true,
});

const SUGGESTION =
  "Split on CRLF too:\n```suggestion\nexport const split = (s) => s.split(/\\r?\\n/);\n```";
const REMARK = "The README should mention CRLF handling.";

/** A pull request that changes src/split.js's only line (README.md is not in its diff). */
async function newPull(headRef: string): Promise<number> {
  const pr = await stack.gh.addPullRequest({
    repo: REPO,
    headRef,
    files: { "src/split.js": "export const split = (s) => s.split('\\n').filter(Boolean);\n" },
    title: "Drop empty lines",
    user: "alice",
  });
  return pr.number as number;
}

/** The review the turn posted: one, with the suggestion on line 1 and the remark in its body. */
function expectOneReview(n: number, answer: string) {
  const { reviews, comments } = stack.gh.reviewsOf(REPO, n);
  expect(reviews).toHaveLength(1);
  const review = reviews[0]!;
  expect(review).toMatchObject({ state: "COMMENTED", user: { login: stack.gh.botLogin() } });
  expect(String(review.body)).toContain("`README.md:1`");
  expect(String(review.body)).toContain(REMARK);
  expect(String(review.body)).not.toContain("suggestion");
  expect(comments).toHaveLength(1);
  expect(comments[0]).toMatchObject({
    path: "src/split.js",
    line: 1,
    side: "RIGHT",
    body: SUGGESTION,
    pull_request_review_id: review.id,
  });
  // The thread's answer links the review.
  expect(answer).toContain(String(review.html_url));
}

describe(
  "line comments on a pull request (real CLIs, GitHub stand-in)",
  { timeout: 240_000 },
  () => {
    it("Claude: one review holds the suggestion on a changed line and keeps the out-of-diff remark", async () => {
      const n = await newPull("drop-empty-claude");
      const from = stack.api.messageRequests().length;
      stack.api.script(
        replies.toolUse("mcp__tether__comment_on_line", {
          path: "src/split.js",
          line: 1,
          body: SUGGESTION,
        }),
        replies.toolUse("mcp__tether__comment_on_line", {
          path: "README.md",
          line: 1,
          body: REMARK,
        }),
        replies.text("Reviewed: one suggestion."),
      );
      const task = await stack.finishedTask(
        await stack.comment(n, "@tether review this change"),
        150_000,
      );
      // The review is counted on the task: one comment on the diff's lines (the other in its body).
      expect(task).toMatchObject({
        status: "succeeded",
        is_pull_request: true,
        review_result: "posted",
        review_line_comments: 1,
      });
      const reqs = stack.api.messageRequests().slice(from);
      // The tool reached the model directly in the request's tool list (not deferred behind
      // ToolSearch), and both calls were recorded.
      const tools = (reqs[0]!.body as { tools?: Array<{ name: string }> }).tools ?? [];
      expect(tools.map((t) => t.name)).toContain("mcp__tether__comment_on_line");
      expect(tools.map((t) => t.name)).not.toContain("ToolSearch");
      const sent = JSON.stringify(reqs.map((r) => r.body));
      expect(sent).toContain("Recorded a comment on src/split.js:1");
      expect(sent).toContain("Recorded a comment on README.md:1");
      expectOneReview(n, answerOf(stack, n, task));
      // Nothing of it was committed: the tool's file is outside the checkout.
      expect(stack.gh.pushesTo(REPO, "drop-empty-claude")).toHaveLength(0);
      // And the run's outbox is gone with its HOME.
      const homes = path.join(stack.dataDir, "sandbox", "homes");
      expect(fs.readdirSync(homes).filter((d) => d.startsWith("review-"))).toEqual([]);

      // The next turn resumes the session: the model sees what it already said on the lines,
      // and a turn with no line comments posts no review.
      const m = stack.api.messageRequests().length;
      const next = await stack.finishedTask(
        await stack.comment(n, "@tether did you comment on the README?"),
        150_000,
      );
      expect(next).toMatchObject({
        status: "succeeded",
        resume_decision: "resume",
        review_result: null,
      });
      const resumed = JSON.stringify(stack.api.messageRequests().slice(m)[0]!.body);
      expect(resumed).toContain("mcp__tether__comment_on_line");
      expect(resumed).toContain(REMARK);
      expect(stack.gh.reviewsOf(REPO, n).reviews).toHaveLength(1);
    });

    it("Codex: the same review turn", async () => {
      const n = await newPull("drop-empty-codex");
      const from = openai.responseRequests().length;
      openai.script(
        codexReplies.namespacedCall("mcp__tether", "comment_on_line", {
          path: "src/split.js",
          line: 1,
          body: SUGGESTION,
        }),
        codexReplies.namespacedCall("mcp__tether", "comment_on_line", {
          path: "README.md",
          line: 1,
          body: REMARK,
        }),
        codexReplies.text("Reviewed: one suggestion."),
      );
      const task = await stack.finishedTask(
        await stack.comment(n, "@codex review this change"),
        150_000,
      );
      expect(task).toMatchObject({ status: "succeeded", is_pull_request: true });
      const reqs = openai.responseRequests().slice(from);
      const names = JSON.stringify(reqs[0]!.body?.tools ?? []);
      expect(names).toContain("comment_on_line");
      expect(JSON.stringify(reqs.map((r) => r.body))).toContain(
        "Recorded a comment on README.md:1",
      );
      expectOneReview(n, answerOf(stack, n, task));
    });
  },
);
