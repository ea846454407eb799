/**
 * Session controls from the thread (#30), end to end: the built app, real Postgres, the real
 * Claude CLI against a fake Messages API, GitHub stood in for. What the fake API is asked is the
 * proof: which model, and which earlier messages came with the request.
 */
import { describe, expect, it } from "vitest";
import { parserIssue, replyOn } from "../helpers/e2e-thread.js";
import { fileStack, REPO } from "../helpers/e2e-stack.js";
import { replies, userTexts, type FakeRequest } from "../helpers/fake-anthropic.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
    models: [claude-opus-4-1, claude-haiku-4-5]
  reviewer:
    model: claude-sonnet-4-5
  coder:
    cli: codex
`;

const { db, stack } = await fileStack({ config: CONFIG });

const newIssue = () => parserIssue(stack);

const mark = () => stack.api.requests.length;

/** The agent's own requests since `from` (not the CLI's side requests), by the system prompt. */
function agentRequests(from: number, agent: string): FakeRequest[] {
  return stack.api
    .messageRequests()
    .filter((r) => r.n > from)
    .filter((r) => {
      const system = r.body?.system;
      const text =
        typeof system === "string" ? system : (system ?? []).map((b) => b.text).join("\n");
      return text.includes(`You are "${agent}", a coding agent run by Tether`);
    });
}

const reply = (issue: number, contains: string) => replyOn(stack, issue, contains);

/** The delivery of a comment, once intake has handled it: its outcome. */
async function handled(commentId: number): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await db.pool.query(
      `SELECT outcome FROM webhook_deliveries WHERE dedupe_key = $1 AND status <> 'pending'`,
      [`comment:${commentId}:created`],
    );
    if (rows[0]) return rows[0].outcome as string;
    if (Date.now() > deadline) throw new Error(`comment ${commentId} was not handled`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

const answerOf = (issue: number, taskId: unknown) =>
  String(stack.taskComments(issue, taskId as number)[0]?.body ?? "");

describe("session controls from the thread", { timeout: 200_000 }, () => {
  it("/model runs one resumed turn on the named model; the next turn is back on the agent's", async () => {
    const n = newIssue();
    const m0 = mark();
    const first = await stack.finishedTask(
      await stack.comment(n, "@tether FIRST-ASK look at split()"),
    );
    expect(first).toMatchObject({ status: "succeeded", requested_model: null });
    expect(agentRequests(m0, "tether").map((r) => r.body?.model)).toContain("claude-sonnet-4-5");

    const m1 = mark();
    const second = await stack.finishedTask(
      await stack.comment(n, "@tether /model claude-opus-4-1 SECOND-ASK try again, harder"),
    );
    expect(second).toMatchObject({
      status: "succeeded",
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: first.session_id,
      requested_model: "claude-opus-4-1",
      model: "claude-opus-4-1",
    });
    const asked = agentRequests(m1, "tether");
    expect(asked.length).toBeGreaterThan(0);
    // The name the comment gave is the name the API was asked for (the CLI's legacy remap is off),
    // and the request carries the session's earlier messages: a resume, not a cold start.
    for (const r of asked) expect(r.body?.model).toBe("claude-opus-4-1");
    const texts = userTexts(asked[0]!);
    expect(texts.some((t) => t.includes("FIRST-ASK"))).toBe(true);
    expect(texts.some((t) => t.includes("SECOND-ASK"))).toBe(true);
    expect(answerOf(n, second.id)).toContain("`claude-opus-4-1` (/model, this turn only)");

    const m2 = mark();
    const third = await stack.finishedTask(await stack.comment(n, "@tether THIRD-ASK and now?"));
    expect(third).toMatchObject({
      resume_decision: "resume",
      session_id: first.session_id,
      requested_model: null,
      model: "claude-sonnet-4-5",
    });
    const back = agentRequests(m2, "tether");
    expect(back.length).toBeGreaterThan(0);
    for (const r of back) expect(r.body?.model).toBe("claude-sonnet-4-5");
    expect(answerOf(n, third.id)).toContain("`claude-sonnet-4-5`");
    expect(answerOf(n, third.id)).not.toContain("/model");
  });

  it("/model on a model whose window is smaller than the session holds: compacted first (by the agent's own model), and the footer says why", async () => {
    const n = newIssue();
    const first = await stack.finishedTask(
      await stack.comment(n, "@tether WINDOW-ONE look at split()"),
    );
    // What the CLI last said of claude-haiku-4-5's window: smaller than what this session holds.
    await db.pool.query(
      `INSERT INTO sessions (session_id, repo, repo_id, issue_number, agent, runtime_id, work_dir, model,
                             history_epoch, context_tokens, context_window, last_used_at)
       VALUES ($1, 'elsewhere/repo', 999999, 1, 'tether', 'rt', '/w', 'claude-haiku-4-5', 0, 10, 1000,
               now() + interval '1 hour')`,
      [`window-probe-${n}`],
    );
    await db.pool.query(
      "UPDATE sessions SET context_tokens = 5000, context_window = 200000 WHERE session_id = $1",
      [first.session_id],
    );
    stack.api.script(replies.text("<summary>WINDOW-SUMMARY of the earlier work.</summary>"));
    const m = mark();
    const second = await stack.finishedTask(
      await stack.comment(n, "@tether /model claude-haiku-4-5 WINDOW-TWO quick check"),
    );
    expect(second).toMatchObject({
      status: "succeeded",
      resume_reason: "compacted",
      compacted: true,
      session_id: first.session_id,
      model: "claude-haiku-4-5",
    });
    const [compaction, turn] = stack.api.messageRequests().filter((r) => r.n > m);
    // The session's own model summarised it; the turn ran on the model asked for.
    expect(compaction!.body?.model).toBe("claude-sonnet-4-5");
    expect(userTexts(compaction!).at(-1)).toContain("summary");
    expect(turn!.body?.model).toBe("claude-haiku-4-5");
    expect(JSON.stringify(turn!.body?.messages)).toContain("WINDOW-SUMMARY");
    expect(answerOf(n, second.id)).toContain(
      "🗜️ compacted and resumed session (the turn's model has a smaller context window)",
    );
  });

  it("a model the agent may not use gets a reply listing the allowed ones, and no run", async () => {
    const n = newIssue();
    const m = mark();
    const c = await stack.comment(n, "@tether /model gpt-4o do it");
    const body = await reply(n, "is not one of this agent's models");
    expect(body).toContain("`gpt-4o`");
    expect(body).toContain(
      "It may run on: `claude-sonnet-4-5`, `claude-opus-4-1`, `claude-haiku-4-5`.",
    );
    expect(await handled(c)).toContain("tether: /model refused");
    const { rows } = await db.pool.query(
      "SELECT count(*)::int AS n FROM tasks WHERE repo = $1 AND issue_number = $2",
      [REPO, n],
    );
    expect(rows[0].n).toBe(0);
    expect(stack.api.messageRequests().filter((r) => r.n > m)).toEqual([]);
  });

  it("/sessions lists the sessions; /resume <prefix> makes the next turn resume the chosen one", async () => {
    const n = newIssue();
    const a = await stack.finishedTask(await stack.comment(n, "@tether ALPHA-ASK first"));
    const b = await stack.finishedTask(await stack.comment(n, "@tether /fresh BETA-ASK oops"));
    expect(b).toMatchObject({ resume_reason: "forced_fresh" });
    const idA = String(a.session_id);
    const idB = String(b.session_id);
    expect(idB).not.toBe(idA);

    await stack.comment(n, "@tether /sessions");
    const list = await reply(n, "sessions on this issue**");
    expect(list).toContain(`| \`${idA.slice(0, 8)}\` | 1 |`);
    expect(list).toContain(`| \`${idB.slice(0, 8)}\` ⏭ | 1 |`);
    expect(list).toContain("| active | `claude-sonnet-4-5` | $");
    // Never a whole id.
    expect(list).not.toContain(idA);
    expect(list).not.toContain(idB);

    const none = await stack.comment(n, "@tether /resume ffffffff");
    expect(
      await reply(n, "no session of this agent on this issue starts with `ffffffff`"),
    ).toBeTruthy();
    expect(await handled(none)).toContain("/resume refused");

    const chose = await stack.comment(n, `@tether /resume ${idA.slice(0, 8)}`);
    expect(await reply(n, `the next turn resumes session \`${idA.slice(0, 8)}\``)).toBeTruthy();
    expect(await handled(chose)).toContain(`session ${idA} chosen`);

    const m = mark();
    const c = await stack.finishedTask(await stack.comment(n, "@tether GAMMA-ASK go on"));
    expect(c).toMatchObject({
      status: "succeeded",
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: idA,
    });
    const texts = userTexts(agentRequests(m, "tether")[0]!);
    expect(texts.some((t) => t.includes("ALPHA-ASK"))).toBe(true);
    expect(texts.some((t) => t.includes("BETA-ASK"))).toBe(false);

    // The choice is settled: the next turn resumes the session the last turn ran in.
    const d = await stack.finishedTask(await stack.comment(n, "@tether DELTA-ASK more"));
    expect(d).toMatchObject({ resume_decision: "resume", session_id: idA });
  });

  it("/from makes the reviewer's first request carry the coder's earlier messages; the coder's session stays as it was", async () => {
    const n = newIssue();
    const coder = await stack.finishedTask(
      await stack.comment(n, "@tether SOURCE-ASK look at split()"),
    );
    const source = String(coder.session_id);
    const before = await db.pool.query(
      `SELECT s.state, s.last_used_at, s.agent, t.raw_bytes, t.sha256
         FROM sessions s JOIN session_transcripts t USING (session_id) WHERE s.session_id = $1`,
      [source],
    );
    expect(before.rows).toHaveLength(1);

    const m = mark();
    const review = await stack.finishedTask(
      await stack.comment(n, "@reviewer /from tether REVIEW-ASK review what it did"),
    );
    expect(review).toMatchObject({
      agent: "reviewer",
      status: "succeeded",
      resume_decision: "resume",
      resume_reason: "forked",
      fork_session_id: source,
    });
    const forked = String(review.session_id);
    expect(forked).not.toBe(source);
    // Only the reviewer ran since `m`. (Its requests are not told apart by the system prompt:
    // seen with the pinned CLI, a forked session keeps the system prompt it was made with.)
    const asked = stack.api.messageRequests().filter((r) => r.n > m);
    expect(asked.length).toBeGreaterThan(0);
    const texts = userTexts(asked[0]!);
    expect(texts.some((t) => t.includes("SOURCE-ASK"))).toBe(true);
    expect(texts.some((t) => t.includes("REVIEW-ASK"))).toBe(true);
    expect(answerOf(n, review.id)).toContain("forked session (/from)");
    // The coder's session: same row, same stored transcript, not touched by the fork.
    const after = await db.pool.query(
      `SELECT s.state, s.last_used_at, s.agent, t.raw_bytes, t.sha256
         FROM sessions s JOIN session_transcripts t USING (session_id) WHERE s.session_id = $1`,
      [source],
    );
    expect(after.rows).toEqual(before.rows);
    const owner = await db.pool.query(`SELECT agent FROM sessions WHERE session_id = $1`, [forked]);
    expect(owner.rows[0]?.agent).toBe("reviewer");

    // Each goes on in its own session: the coder's never saw the review.
    const m2 = mark();
    const coder2 = await stack.finishedTask(await stack.comment(n, "@tether AFTER-ASK go on"));
    expect(coder2).toMatchObject({ resume_reason: "resumed", session_id: source });
    const coderTexts = userTexts(agentRequests(m2, "tether")[0]!);
    expect(coderTexts.some((t) => t.includes("SOURCE-ASK"))).toBe(true);
    expect(coderTexts.some((t) => t.includes("REVIEW-ASK"))).toBe(false);
    const review2 = await stack.finishedTask(await stack.comment(n, "@reviewer and the tests?"));
    expect(review2).toMatchObject({ resume_reason: "resumed", session_id: forked });
  });

  it("/from is refused with a reply, and no run, across CLIs or without a session to fork", async () => {
    const n = newIssue();
    const m = mark();
    const across = await stack.comment(n, "@reviewer /from coder look");
    expect(
      await reply(n, "an agent can fork only a session of its own CLI, and only on claude"),
    ).toContain("`@coder` on codex");
    expect(await handled(across)).toContain("/from refused");
    const none = await stack.comment(n, "@reviewer /from @tether look");
    expect(await reply(n, "`@tether` has no session on this issue to fork")).toBeTruthy();
    expect(await handled(none)).toContain("/from refused");
    const { rows } = await db.pool.query(
      "SELECT count(*)::int AS n FROM tasks WHERE repo = $1 AND issue_number = $2",
      [REPO, n],
    );
    expect(rows[0].n).toBe(0);
    expect(stack.api.messageRequests().filter((r) => r.n > m)).toEqual([]);
  });

  describe("a comment the session read is edited or deleted: the session is rewound", () => {
    /** The agent's first request of the turn for `comment`, and where it starts. */
    async function turn(n: number, body: string) {
      const m = mark();
      const task = await stack.finishedTask(await stack.comment(n, body));
      const req = agentRequests(m, "tether")[0]!;
      return { task, req, all: JSON.stringify(req.body?.messages) };
    }
    /** The fake API's answer to `req` (its default reply names the request's number). */
    const replyTo = (req: FakeRequest) => `reply#${req.n} seen_messages=`;
    /** Waits until intake has bumped the key's history epoch to `epoch`. */
    async function epochAt(n: number, epoch: number): Promise<void> {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const { rows } = await db.pool.query(
          "SELECT epoch FROM history_epochs WHERE repo_id = (SELECT repo_id FROM tasks WHERE repo = $1 LIMIT 1) AND issue_number = $2 AND agent = 'tether'",
          [REPO, n],
        );
        if ((rows[0]?.epoch ?? 0) >= epoch) return;
        if (Date.now() > deadline) throw new Error(`history epoch never reached ${epoch}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }

    it("an edited early comment: the next request carries what came before it and the new text, not the old text nor what was said after it", async () => {
      const n = newIssue();
      const one = await turn(n, "@tether ONE-ASK look at split()");
      const two = await turn(n, "@tether TWO-ASK old-wording please");
      const three = await turn(n, "@tether THREE-ASK and the tests");
      const session = one.task.session_id;
      expect(two.task).toMatchObject({ resume_reason: "resumed", session_id: session });
      expect(three.task).toMatchObject({ resume_reason: "resumed", session_id: session });
      // Where each resumed turn entered the session is recorded.
      expect(two.task.session_entry).toEqual(expect.any(String));
      expect(three.task.session_entry).toEqual(expect.any(String));
      expect(one.task.session_entry).toBeNull();

      const twoComment = (
        await db.pool.query(`SELECT comment_id FROM task_comments WHERE task_id = $1`, [
          two.task.id,
        ])
      ).rows[0].comment_id as number;
      await stack.editComment(n, twoComment, "@tether TWO-ASK new-wording please");
      await epochAt(n, 1);

      const four = await turn(n, "@tether FOUR-ASK go on");
      expect(four.task).toMatchObject({
        status: "succeeded",
        resume_decision: "resume",
        resume_reason: "rewound",
        session_id: session,
        rewound_from: two.task.id,
      });
      // The session as it stood before TWO-ASK entered it: the first request and its answer…
      expect(four.all).toContain("ONE-ASK");
      expect(four.all).toContain(replyTo(one.req));
      // …then the edited comment (and the one after it) sent again, and the new request.
      const last = userTexts(four.req).at(-1)!;
      expect(last).toContain("TWO-ASK new-wording please");
      expect(last).toContain("THREE-ASK");
      expect(last).toContain("FOUR-ASK");
      expect(last).toContain("This conversation was rewound");
      // Not the old text, nor what the session said after it.
      expect(four.all).not.toContain("old-wording");
      expect(four.all).not.toContain(replyTo(two.req));
      expect(four.all).not.toContain(replyTo(three.req));
      expect(answerOf(n, four.task.id)).toContain("⏪ rewound session");

      // The rewind settled the edit: the next turn resumes the rewound session as it is.
      const five = await turn(n, "@tether FIVE-ASK more");
      expect(five.task).toMatchObject({ resume_reason: "resumed", session_id: session });
      expect(five.all).toContain("FOUR-ASK");
      expect(five.all).toContain(replyTo(four.req));
      expect(five.all).not.toContain("old-wording");
      expect(five.all).not.toContain(replyTo(two.req));
    });

    it("a deleted comment: the session goes back to before it and the comment is not sent again", async () => {
      const n = newIssue();
      const one = await turn(n, "@tether DEL-ONE look at split()");
      const two = await turn(n, "@tether DEL-TWO rename it");
      const three = await turn(n, "@tether DEL-THREE and the docs");
      const twoComment = (
        await db.pool.query(`SELECT comment_id FROM task_comments WHERE task_id = $1`, [
          two.task.id,
        ])
      ).rows[0].comment_id as number;
      stack.gh.deleteComment(twoComment);
      await stack.deliver(
        stack.gh.webhooks.issueComment({
          repo: REPO,
          issueNumber: n,
          commentId: twoComment,
          action: "deleted",
        }),
      );
      await epochAt(n, 1);

      const four = await turn(n, "@tether DEL-FOUR go on");
      expect(four.task).toMatchObject({
        resume_reason: "rewound",
        session_id: one.task.session_id,
        rewound_from: two.task.id,
      });
      expect(four.all).toContain("DEL-ONE");
      expect(four.all).toContain(replyTo(one.req));
      expect(four.all).not.toContain("DEL-TWO");
      expect(four.all).not.toContain(replyTo(two.req));
      expect(four.all).not.toContain(replyTo(three.req));
      const last = userTexts(four.req).at(-1)!;
      expect(last).toContain("DEL-THREE");
      expect(last).toContain("DEL-FOUR");
      expect(last).toContain("was deleted on GitHub");
    });

    it("an edit of the first (cold) turn's comment cannot be rewound past: fresh, history_edited", async () => {
      const n = newIssue();
      const c1 = await stack.comment(n, "@tether COLD-ONE first");
      const one = await stack.finishedTask(c1);
      await turn(n, "@tether COLD-TWO second");
      await stack.editComment(n, c1, "@tether COLD-ONE first (edited)");
      await epochAt(n, 1);
      const three = await turn(n, "@tether COLD-THREE third");
      expect(three.task).toMatchObject({
        resume_decision: "fresh",
        resume_reason: "history_edited",
      });
      expect(three.task.session_id).not.toBe(one.session_id);
    });
  });
});
