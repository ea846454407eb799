/**
 * Issue 5's end-to-end scenarios: the built app as a process, real Postgres, the real Claude CLI
 * against a fake Messages API, GitHub stood in for over HTTP. Each test is one scenario. What
 * every CLI must do (the overflow retry, a rejected resume, the crash after the pin, a lost
 * disk, /cancel) is in the table-driven test/helpers/cli-contract-suite.ts, the Claude row among them.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import { lastUserText, replies, userTexts, type FakeRequest } from "../helpers/fake-anthropic.js";
import {
  installationRequests,
  lastSeq,
  routeCounts,
  turnRequests,
} from "../helpers/turn-requests.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
  reviewer:
    model: claude-sonnet-4-5
`;

const db = await createTestDatabase();
let stack: Stack;
let issueCount = 0;

beforeAll(async () => {
  // GitHub's stateless installation tokens (~520 characters): git, redaction and the client
  // all see the long kind in this file's turns.
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    config: CONFIG,
    github: { statelessTokens: true },
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

function newIssue(title = "Parser drops the last line"): number {
  issueCount++;
  const issue = stack.gh.addIssue({
    repo: REPO,
    title,
    body: `Issue body ${issueCount}: feeding a file without a trailing newline loses its last line.`,
    user: "alice",
  });
  return issue.number as number;
}

/** Messages requests the fake API received since `from`. */
function requestsSince(from: number): FakeRequest[] {
  return stack.api.messageRequests().filter((r) => r.n > from);
}
const mark = () => stack.api.requests.length;

/** Wait for a condition the app makes true (no deadline: the test's timeout is the bound). */
async function until(ok: () => boolean): Promise<void> {
  while (!ok()) await new Promise((r) => setTimeout(r, 20));
}

describe(
  "Tether end to end (real CLI, real Postgres, GitHub stand-in)",
  { timeout: 150_000 },
  () => {
    it("1. first comment: fresh run, answer posted, session_id stored", async () => {
      const n = newIssue();
      const c = await stack.comment(n, "@tether what does split() do?");
      const task = await stack.finishedTask(c);
      expect(task).toMatchObject({
        status: "succeeded",
        outcome: "success",
        resume_decision: "fresh",
        resume_reason: "no_prior_session",
        is_follow_up: false,
      });
      expect(task.session_id).toMatch(/^[0-9a-f-]{36}$/);
      const posted = stack.taskComments(n, task.id as number);
      expect(posted).toHaveLength(1);
      expect(String(posted[0]!.body)).toMatch(/^reply#\d+ seen_messages=1/);
      expect(String(posted[0]!.body)).toContain("fresh session (no_prior_session)");
      const session = await db.pool.query("SELECT * FROM sessions WHERE session_id = $1", [
        task.session_id,
      ]);
      expect(session.rows[0]).toMatchObject({ state: "active", runtime_id: "rt-e2e", repo: REPO });
    });

    it("2. follow-up: resumed; the API saw the earlier messages; the last user message is the focus guard and the new comment only", async () => {
      const n = newIssue();
      const first = await stack.finishedTask(
        await stack.comment(n, "@tether FIRST-REQUEST explain split()"),
      );
      const m = mark();
      const ghFrom = lastSeq(stack.gh);
      const second = await stack.finishedTask(
        await stack.comment(n, "@tether SECOND-REQUEST now add a test", "bob"),
      );
      // Tether's own count of the turn's GitHub requests (#34) is the stand-in's count of the
      // requests made with the turn's tokens; those answered 304 apart.
      const made = turnRequests(stack.gh, ghFrom);
      expect(made.length).toBeGreaterThan(0);
      expect(second.github_requests).toBe(made.filter((r) => r.status !== 304).length);
      expect(second.github_requests_not_modified).toBe(made.filter((r) => r.status === 304).length);
      expect(second).toMatchObject({
        status: "succeeded",
        resume_decision: "resume",
        resume_reason: "resumed",
        is_follow_up: true,
        session_id: first.session_id,
      });
      const reqs = requestsSince(m);
      expect(reqs.length).toBeGreaterThan(0);
      const req = reqs[0]!;
      const texts = userTexts(req);
      expect(texts.length).toBeGreaterThanOrEqual(2);
      expect(texts.some((t) => t.includes("FIRST-REQUEST"))).toBe(true); // the history, sent by the CLI
      const last = lastUserText(req);
      expect(last).toContain("A NEW comment arrived");
      expect(last).toContain("Focus on THIS comment");
      expect(last).toContain("SECOND-REQUEST");
      expect(last).not.toContain("FIRST-REQUEST");
      expect(last).not.toContain("Issue body"); // no re-sent thread
      expect(stack.taskComments(n, second.id as number)).toHaveLength(1);
    });

    it("2b. a follow-up that publishes nothing costs at most 4 requests against the rate limit; the reads that did not change are 304s", async () => {
      // A push the app hears of: from then on the repository's config is pinned until the next.
      await stack.gh.commit(REPO, { files: { "CHANGES.md": "a push\n" } });
      const n = newIssue();
      await stack.finishedTask(await stack.comment(n, "@tether look at split()"));
      // The first follow-up in a repository is the first to look up its default branch (a 200,
      // kept); the one measured is the next, as most follow-ups are.
      await stack.finishedTask(await stack.comment(n, "@tether and the edge cases?"));
      const ghFrom = lastSeq(stack.gh);
      const commentId = await stack.comment(n, "@tether and now the tests?");
      const task = await stack.finishedTask(commentId);
      expect(task).toMatchObject({ status: "succeeded", resume_reason: "resumed" });
      // Intake's 👀 is made after the delivery is recorded: it belongs to this turn too.
      await until(() => stack.gh.reactions(REPO, { commentId }).some((r) => r.content === "eyes"));
      // Everything the installation's rate limit is charged for, intake's and the turn's, as
      // the stand-in logged it (a 304 is free, as on GitHub).
      const { counted, notModified } = installationRequests(stack.gh, ghFrom);
      // A turn that runs longer than the progress interval (3 s) also edits its tracking comment
      // as it goes; on a loaded machine even this one may. Those edits are counted writes too,
      // in proportion to the turn's length, not to what it reads: the budget here is the rest.
      const patches = counted.filter((r) => r.method === "PATCH");
      const progressEdits = patches.slice(0, -1);
      const what = `progress edits: ${progressEdits.length}; counted:\n  ${routeCounts(counted).join("\n  ")}\n304:\n  ${routeCounts(notModified).join("\n  ")}`;
      expect(counted.length - progressEdits.length, what).toBeLessThanOrEqual(4);
      // The writes cannot be cut: the 👀, the tracking comment, its final edit. How many
      // progress edits come before that one depends on the machine, not on the feature: every
      // PATCH is of the tracking comment, and there is at least the final one.
      expect(routeCounts(counted.filter((r) => r.method !== "PATCH")), what).toEqual(
        expect.arrayContaining([
          "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions ×1",
          "POST /repos/{owner}/{repo}/issues/{issue_number}/comments ×1",
        ]),
      );
      const tracking = stack.taskComments(n, task.id as number);
      expect(tracking, what).toHaveLength(1);
      expect(patches.length, what).toBeGreaterThanOrEqual(1);
      for (const p of patches)
        expect(p.path, what).toMatch(new RegExp(`/issues/comments/${String(tracking[0]!.id)}$`));
      // The reads that did not change were asked conditionally: the asker's permission and user
      // record, the default branch.
      const conditional = routeCounts(notModified).join("\n");
      expect(conditional, what).toContain(
        "GET /repos/{owner}/{repo}/collaborators/{username}/permission ×1",
      );
      expect(conditional, what).toContain("GET /users/{username} ×1");
      expect(conditional, what).toContain("GET /repos/{owner}/{repo}/branches/{branch}");
      // The issue came with the webhook: not asked at all.
      expect(
        [...counted, ...notModified].filter((r) => r.route?.endsWith("/issues/{issue_number}")),
        what,
      ).toEqual([]);
      // The config was not asked at all: pinned until a push.
      expect(
        [...counted, ...notModified].filter((r) => r.path.includes("/contents/")),
        what,
      ).toEqual([]);
      expect(task.github_requests_not_modified).toBeGreaterThan(0);
    });

    it("2c. a push to the default branch makes the next turn read the config again", async () => {
      const n = newIssue();
      const before = lastSeq(stack.gh);
      await stack.gh.commit(REPO, { files: { "NOTES.md": "a push\n" } });
      await stack.finishedTask(await stack.comment(n, "@tether hello after a push"));
      const reads = stack.gh.requests.filter(
        (r) => r.seq > before && r.kind === "rest" && r.path.includes("/contents/"),
      );
      // Asked again, conditionally: the file did not change, so GitHub answers 304.
      expect(reads.length).toBeGreaterThan(0);
      expect(reads.every((r) => r.status === 304)).toBe(true);
    });

    it("3. /fresh starts a new session; the next follow-up resumes the new one", async () => {
      const n = newIssue();
      const a = await stack.finishedTask(await stack.comment(n, "@tether start"));
      const b = await stack.finishedTask(
        await stack.comment(n, "@tether /fresh start over please"),
      );
      expect(b).toMatchObject({
        resume_decision: "fresh",
        resume_reason: "forced_fresh",
        status: "succeeded",
      });
      expect(b.session_id).not.toBe(a.session_id);
      const c = await stack.finishedTask(await stack.comment(n, "@tether and continue"));
      expect(c).toMatchObject({
        resume_decision: "resume",
        resume_reason: "resumed",
        session_id: b.session_id,
      });
    });

    it("4. a second agent on the same issue has its own session", async () => {
      const n = newIssue();
      const t = await stack.finishedTask(await stack.comment(n, "@tether look at this"));
      const r = await stack.finishedTask(await stack.comment(n, "@reviewer review it"));
      expect(r).toMatchObject({
        agent: "reviewer",
        resume_reason: "no_prior_session",
        status: "succeeded",
      });
      expect(r.session_id).not.toBe(t.session_id);
      expect(r.work_dir).not.toBe(t.work_dir);
      const t2 = await stack.finishedTask(await stack.comment(n, "@tether follow up"));
      expect(t2).toMatchObject({
        agent: "tether",
        resume_reason: "resumed",
        session_id: t.session_id,
      });
    });

    it("5. a poisoned turn's session is not resumed", async () => {
      const n = newIssue();
      stack.api.script(replies.promptTooLong());
      const p = await stack.finishedTask(await stack.comment(n, "@tether read everything"));
      expect(p).toMatchObject({ status: "failed", outcome: "poisoned" });
      expect(p.session_id).toBeTruthy();
      expect(String(stack.taskComments(n, p.id as number)[0]!.body)).toContain(
        "no longer fits the model",
      );
      const next = await stack.finishedTask(await stack.comment(n, "@tether try again"));
      expect(next).toMatchObject({
        status: "succeeded",
        resume_decision: "fresh",
        resume_reason: "poisoned",
      });
      expect(next.session_id).not.toBe(p.session_id);
    });

    it("5c. a resumed turn answered 'prompt is too long' once: the CLI compacts by itself and the turn is answered, resumed", async () => {
      const n = newIssue();
      const a = await stack.finishedTask(await stack.comment(n, "@tether SQUEEZE-ONE read it"));
      stack.api.script(replies.promptTooLong());
      const m = mark();
      const b = await stack.finishedTask(await stack.comment(n, "@tether SQUEEZE-TWO go on"));
      expect(b).toMatchObject({
        status: "succeeded",
        outcome: "success",
        resume_decision: "resume",
        retried_fresh: false,
        session_id: a.session_id,
      });
      const reqs = requestsSince(m);
      expect(reqs[0]!.reply).toBe("error");
      // The request that answered carried a summary instead of the old messages.
      const last = reqs.at(-1)!;
      expect(JSON.stringify(last.body?.messages)).toContain("being continued from a previous");
      expect(lastUserText(last)).toContain("SQUEEZE-TWO");
      expect(stack.taskComments(n, b.id as number)).toHaveLength(1);
      expect(
        (await db.pool.query("SELECT state FROM sessions WHERE session_id = $1", [a.session_id]))
          .rows[0].state,
      ).not.toBe("poisoned");
    });

    it("9. an edited earlier comment: fresh with history_edited", async () => {
      const n = newIssue();
      const c1 = await stack.comment(n, "@tether version one");
      await stack.finishedTask(c1);
      await stack.editComment(n, c1, "@tether version one (edited)");
      // The edit goes through the inbox; wait until the epoch moved.
      const deadline = Date.now() + 20_000;
      for (;;) {
        const { rows } = await db.pool.query(
          "SELECT epoch FROM history_epochs WHERE repo_id = (SELECT repo_id FROM tasks WHERE repo = $1 LIMIT 1) AND issue_number = $2 AND agent = 'tether'",
          [REPO, n],
        );
        if ((rows[0]?.epoch ?? 0) > 0) break;
        if (Date.now() > deadline) throw new Error("history epoch never bumped");
        await new Promise((r) => setTimeout(r, 100));
      }
      const b = await stack.finishedTask(await stack.comment(n, "@tether continue"));
      expect(b).toMatchObject({
        status: "succeeded",
        resume_decision: "fresh",
        resume_reason: "history_edited",
      });
    });

    it("11. a comment on a pull request works on the PR's head branch, and reads its review", async () => {
      const pr = await stack.gh.addPullRequest({
        repo: REPO,
        headRef: "fix-split",
        files: { "src/split.js": "export const split = (s) => s.split(/\\r?\\n/);\n" },
        title: "Fix split",
        user: "alice",
      });
      const n = pr.number as number;
      stack.gh.addReviewComment({
        repo: REPO,
        number: n,
        path: "src/split.js",
        line: 1,
        body: "A lone CR still slips through this regex.",
        user: "dora",
      });
      stack.gh.addReview({
        repo: REPO,
        number: n,
        state: "CHANGES_REQUESTED",
        body: "Please add a test for old Mac line endings.",
        user: "dora",
      });
      const m = mark();
      const t = await stack.finishedTask(await stack.comment(n, "@tether review this change"));
      expect(t).toMatchObject({ status: "succeeded", is_pull_request: true });
      const branch = execFileSync(
        "git",
        ["-C", t.work_dir as string, "rev-parse", "--abbrev-ref", "HEAD"],
        { encoding: "utf8" },
      ).trim();
      expect(branch).toBe("fix-split");
      expect(fs.readFileSync(path.join(t.work_dir as string, "src/split.js"), "utf8")).toContain(
        "\\r?\\n",
      );
      const prompt = requestsSince(m)
        .map(lastUserText)
        .find((text) => text.includes("pull request octo/widgets#"));
      expect(prompt).toBeDefined();
      // The review discussion, read through the REST API, each item after its place in the diff.
      expect(prompt).toMatch(
        /\[Review comment on `src\/split\.js`, line 1 of the pull request's version \(the right side of the diff\) at commit [0-9a-f]{40}\.\]\n\nA lone CR still slips through this regex\./,
      );
      expect(prompt).toMatch(
        /\[Pull request review \(changes requested\) at commit [0-9a-f]{40}\.\]\n\nPlease add a test for old Mac line endings\./,
      );
    });

    it("11a. a reply to a review comment quotes its parent, read back from GitHub, and gets 👀", async () => {
      const pr = await stack.gh.addPullRequest({
        repo: REPO,
        headRef: "reply-thread",
        files: { "src/join.js": "export const join = (a) => a.join('\\n');\n" },
        title: "Add join",
        user: "alice",
      });
      const n = pr.number as number;
      const parent = stack.gh.addReviewComment({
        repo: REPO,
        number: n,
        path: "src/join.js",
        line: 1,
        body: "Windows readers want CRLF here.",
        user: "dora",
      });
      const reply = stack.gh.addReviewComment({
        repo: REPO,
        number: n,
        path: "src/join.js",
        line: 1,
        body: "@tether do what dora suggests",
        user: "alice",
        inReplyTo: parent.id as number,
      });
      const m = mark();
      await stack.deliver(
        stack.gh.webhooks.pullRequestReviewComment({ repo: REPO, number: n, comment: reply }),
      );
      const t = await stack.finishedTask(reply.id as number);
      expect(t).toMatchObject({ status: "succeeded", is_pull_request: true });
      const prompt = requestsSince(m)
        .map(lastUserText)
        .find((text) => text.includes("do what dora suggests"));
      expect(prompt).toContain("replies to a review comment by @dora");
      expect(prompt).toContain("> Windows readers want CRLF here.");
      expect(stack.gh.reactions(REPO, { reviewCommentId: reply.id as number })).toEqual([
        { user: stack.gh.botLogin(), content: "eyes" },
      ]);
    });

    it("12. every token a turn uses is scoped to the task's repository and the step's permissions", async () => {
      const from = stack.gh.requests.length;
      const n = newIssue();
      const t = await stack.finishedTask(await stack.comment(n, "@tether look at split"));
      expect(t).toMatchObject({ status: "succeeded" });
      const seen = stack.gh.requests.slice(from);
      const grantOf = (r: (typeof seen)[number]) => stack.gh.tokenGrant(r.token ?? "");
      // The mirror's fetch: this repository, contents read, nothing else.
      const fetches = seen.filter((r) => r.kind === "git");
      expect(fetches.length).toBeGreaterThan(0);
      for (const r of fetches)
        expect(grantOf(r)).toMatchObject({
          repositories: [REPO],
          permissions: { contents: "read", metadata: "read" },
        });
      // The answer: this repository, no contents write, no other permission.
      const answers = seen.filter(
        (r) =>
          r.method === "POST" &&
          r.route?.endsWith("/comments") &&
          String((r.body as { body?: string }).body).includes(`tether:task:${t.id}`),
      );
      expect(answers).toHaveLength(1);
      expect(grantOf(answers[0]!)).toEqual({
        token: answers[0]!.token,
        repositories: [REPO],
        permissions: {
          issues: "write",
          pull_requests: "write",
          contents: "read",
          metadata: "read",
        },
      });
      // Such a token cannot touch another repository of the same installation.
      await stack.gh.addRepo({ owner: "octo", name: "other", files: { "README.md": "x\n" } });
      const other = await fetch(`${stack.gh.apiUrl}/repos/octo/other/issues`, {
        headers: { authorization: `token ${answers[0]!.token}` },
      });
      expect(other.status).toBe(404);
    });

    it("13. a session over the context budget is compacted (/compact on a resumed run) and resumed: the API gets the summary, not the old history; one answer", async () => {
      const n = newIssue();
      const a = await stack.finishedTask(
        await stack.comment(n, "@tether ALPHA-REQUEST explain split()"),
      );
      const b = await stack.finishedTask(
        await stack.comment(n, "@tether BETA-REQUEST and join()?"),
      );
      expect(b).toMatchObject({ resume_reason: "resumed", session_id: a.session_id });
      // The session's recorded context use is past resume.contextBudget (0.8) of its window.
      await db.pool.query(
        "UPDATE sessions SET context_tokens = 190000, context_window = 200000 WHERE session_id = $1",
        [a.session_id],
      );
      // The model's answer to the CLI's summarising request is the summary.
      stack.api.script(
        replies.text("<summary>SUMMARY-OF-EARLIER-WORK: split() and join() explained.</summary>"),
      );
      const m = mark();
      const c = await stack.finishedTask(
        await stack.comment(n, "@tether GAMMA-REQUEST now add a test"),
      );
      expect(c).toMatchObject({
        status: "succeeded",
        outcome: "success",
        resume_decision: "resume",
        resume_reason: "compacted",
        compacted: true,
        session_id: a.session_id, // the CLI keeps the id through a compaction
      });
      const [compaction, turn, ...more] = requestsSince(m);
      expect(more).toHaveLength(0);
      // 1: the compaction: the whole history, then the CLI's instruction to summarise it.
      const asked = userTexts(compaction!).join("\n");
      expect(asked).toContain("ALPHA-REQUEST");
      expect(asked).toContain("BETA-REQUEST");
      expect(lastUserText(compaction!)).toContain("create a detailed summary of the conversation");
      expect(asked).not.toContain("GAMMA-REQUEST");
      // 2: the turn resumed the compacted session: the summary, not the earlier requests.
      const sent = userTexts(turn!).join("\n");
      expect(sent).toContain("SUMMARY-OF-EARLIER-WORK");
      expect(sent).not.toContain("ALPHA-REQUEST");
      expect(sent).not.toContain("BETA-REQUEST");
      expect(lastUserText(turn!)).toContain("GAMMA-REQUEST");
      expect(lastUserText(turn!)).toContain("A NEW comment arrived");
      // One answer, the turn's, in the task's one comment.
      const posted = stack.taskComments(n, c.id as number);
      expect(posted).toHaveLength(1);
      expect(String(posted[0]!.body)).toMatch(new RegExp(`^reply#${turn!.n} `));
      expect(String(posted[0]!.body)).toContain("compacted and resumed session");
      // The context the session holds now is the summary's, so the next turn resumes as it is.
      const after = await db.pool.query(
        "SELECT context_tokens FROM sessions WHERE session_id = $1",
        [a.session_id],
      );
      expect(after.rows[0].context_tokens).toBeLessThan(160_000);
      const d = await stack.finishedTask(await stack.comment(n, "@tether DELTA-REQUEST thanks"));
      expect(d).toMatchObject({ resume_reason: "resumed", session_id: a.session_id });
    });
  },
);
