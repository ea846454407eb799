/**
 * Spend limits end to end: the built app, real Postgres, the real Claude CLI against a fake
 * Messages API (whose simulated usage makes a fresh turn cost the CLI's reckoning about $0.11
 * and a resumed one about a cent), GitHub stood in for.
 */
import { describe, expect, it } from "vitest";
import { answerOf, parserIssue, replyOn } from "../helpers/e2e-thread.js";
import { fileStack, REPO } from "../helpers/e2e-stack.js";
import { replies } from "../helpers/fake-anthropic.js";
import { formatSpent } from "../../src/spend/spend-limits.js";

/**
 * `claude` answers @tether and may spend $0.10 a conversation (a fresh turn on a cold prompt
 * cache reaches it); `again` may spend $0.02, reached in a turn or two on a warm cache.
 */
const config = (freshResets: boolean) => `
agents:
  claude:
    mention: "@tether"
    conversationLimitUsd: 0.1
  capped:
    turnLimitUsd: 0.01
  steady:
    conversationLimitUsd: 50
  again:
    conversationLimitUsd: 0.02
spend:
  freshResetsConversation: ${freshResets}
`;

const { db, stack } = await fileStack({ config: config(false) });

const newIssue = () => parserIssue(stack);

const apiCalls = () => stack.api.messageRequests().length;
const reply = (issue: number, contains: string) => replyOn(stack, issue, contains);

describe("spend limits, end to end", { timeout: 180_000 }, () => {
  /**
   * Comments `mention` on issue `n` until a turn is refused, checking the rule on the way: each
   * turn ran while what the conversation had spent (from `since` on) was under `limit`, and the
   * refused one came once it was not. Returns the turns that ran and the refused task.
   */
  async function untilRefused(n: number, mention: string, limit: number, since = 0) {
    const ran: Array<Record<string, unknown>> = [];
    let spent = since;
    for (let i = 0; i < 12; i++) {
      const t = await stack.finishedTask(await stack.comment(n, `${mention} step ${i}`));
      if (t.outcome === "limit_refused") {
        expect(spent).toBeGreaterThanOrEqual(limit);
        return { ran, refused: t, spent };
      }
      expect(spent).toBeLessThan(limit);
      expect(t).toMatchObject({ status: "succeeded" });
      spent += Number(t.cost_usd);
      expect(answerOf(stack, n, t)).toContain(
        `conversation ${formatSpent(spent)} of $${limit.toFixed(2)}`,
      );
      ran.push(t);
    }
    throw new Error("no turn was refused");
  }

  it("a conversation that reached its limit: the next comment gets the refusal and no run; /fresh does not help while the config says it does not reset", async () => {
    const n = newIssue();
    const { ran, refused, spent } = await untilRefused(n, "@tether", 0.1);
    expect(ran.length).toBeGreaterThan(0);
    expect(refused).toMatchObject({
      status: "cancelled",
      outcome: "limit_refused",
      resume_decision: null,
      session_id: null,
      cost_usd: null,
    });
    const refusal = answerOf(stack, n, refused);
    expect(refusal).toMatch(/^💸 Not run/);
    expect(refusal).toContain(
      `This conversation (\`@tether\` on this issue) has spent **${formatSpent(spent)}** of its **$0.10** limit (\`agents.claude.conversationLimitUsd\`).`,
    );
    expect(refusal).toContain("raise the limit in `.github/tether.yml`");
    expect(refusal).toContain("`/fresh` does not help");

    const calls = apiCalls();
    const again = await stack.finishedTask(await stack.comment(n, "@tether please?"));
    expect(again).toMatchObject({ outcome: "limit_refused" });
    const fresh = await stack.finishedTask(await stack.comment(n, "@tether /fresh start over"));
    expect(fresh).toMatchObject({ outcome: "limit_refused", force_fresh: true });
    expect(apiCalls()).toBe(calls); // none of them reached the CLI
  });

  it("with spend.freshResetsConversation: /fresh starts a new count and runs; later turns count from it", async () => {
    await stack.gh.setConfig(REPO, config(true));
    try {
      const n = newIssue();
      const { refused, spent } = await untilRefused(n, "@again", 0.02);
      expect(answerOf(stack, n, refused)).toContain("Or start over with `@again /fresh <request>`");

      const fresh = await stack.finishedTask(await stack.comment(n, "@again /fresh over again"));
      expect(fresh).toMatchObject({
        status: "succeeded",
        resume_decision: "fresh",
        resume_reason: "forced_fresh",
      });
      const freshCost = Number(fresh.cost_usd);
      // The footer counts this turn alone, not what the conversation spent before it.
      expect(spent).toBeGreaterThanOrEqual(0.02);
      expect(answerOf(stack, n, fresh)).toContain(
        `conversation ${formatSpent(freshCost)} of $0.02`,
      );
      // And so does the limit: the next turn is judged on the spend since /fresh alone.
      const next = await stack.finishedTask(await stack.comment(n, "@again go on"));
      if (freshCost >= 0.02) expect(next).toMatchObject({ outcome: "limit_refused" });
      else {
        expect(next).toMatchObject({ status: "succeeded", resume_decision: "resume" });
        expect(answerOf(stack, n, next)).toContain(
          `conversation ${formatSpent(freshCost + Number(next.cost_usd))} of $0.02`,
        );
      }
    } finally {
      await stack.gh.setConfig(REPO, config(false));
    }
  });

  it("a per-turn limit stops the run: outcome turn_limit, and the answer and its footer say so", async () => {
    const n = newIssue();
    stack.api.script(replies.text("HALF-DONE: split() drops the last line because"));
    const t = await stack.finishedTask(await stack.comment(n, "@capped look into it"));
    expect(t).toMatchObject({ agent: "capped", status: "failed", outcome: "turn_limit" });
    expect(Number(t.cost_usd)).toBeGreaterThan(0.01); // checked after the call: over by one call
    const body = answerOf(stack, n, t);
    expect(body).toMatch(/^💸 The run reached this agent's per-turn spend limit of \$0\.01/);
    expect(body).toContain(`after spending ${formatSpent(Number(t.cost_usd))}`);
    expect(body).toContain("`agents.capped.turnLimitUsd`");
    expect(body).toContain("> HALF-DONE: split() drops the last line because");
    expect(body).toMatch(/<sub>.*⛔ stopped at the \$0\.01 turn limit.*<\/sub>/);
    // The session is kept: the next comment resumes it (and is stopped again, cheaply or not).
    const next = await stack.finishedTask(await stack.comment(n, "@capped go on"));
    expect(next).toMatchObject({ resume_decision: "resume", session_id: t.session_id });
  });

  it("/status: the conversation's spend, turns, context and estimated savings match its recorded turns", async () => {
    const n = newIssue();
    await stack.finishedTask(await stack.comment(n, "@steady what does split() do?"));
    await stack.finishedTask(await stack.comment(n, "@steady and join()?"));
    const { rows } = await db.pool.query(
      `SELECT resume_reason, cost_usd, prompt_bytes, answer_bytes, input_tokens,
              cache_read_tokens, cache_creation_tokens, session_id
         FROM tasks WHERE repo = $1 AND issue_number = $2 AND agent = 'steady' ORDER BY id`,
      [REPO, n],
    );
    expect(rows.map((r) => r.resume_reason)).toEqual(["no_prior_session", "resumed"]);
    const [fresh, resumed] = rows as Array<Record<string, number>>;
    const total = fresh!.cost_usd! + resumed!.cost_usd!;
    expect(fresh!.prompt_bytes).toBeGreaterThan(100);
    expect(fresh!.answer_bytes).toBeGreaterThan(5);
    const session = (
      await db.pool.query(
        "SELECT context_tokens, context_window FROM sessions WHERE session_id = $1",
        [resumed!.session_id],
      )
    ).rows[0] as { context_tokens: number; context_window: number };

    await stack.comment(n, "@steady /status");
    const status = await reply(n, "**`@steady` on this issue**");
    expect(status).toContain(
      `- Spend: ${formatSpent(total)} over 2 turns; the conversation limit is $50.00 (${formatSpent(50 - total)} left).`,
    );
    const k = (v: number) =>
      v >= 10_000 ? `${(v / 1000).toFixed(1).replace(/\.0$/, "")}k` : v.toLocaleString("en-US");
    expect(status).toContain(
      `- Context: ${k(session.context_tokens)} tokens of ${k(session.context_window)} (${Math.round((100 * session.context_tokens) / session.context_window)}%)`,
    );
    // By the savings benchmark's accounting: the resumed turn would have re-sent the first
    // turn's prompt and answer (4 bytes a token) at 1× instead of reading them at 0.1×.
    const saved = Math.round((0.9 * (fresh!.prompt_bytes! + fresh!.answer_bytes!)) / 4);
    const used = Math.round(
      0.1 * resumed!.cache_read_tokens! + resumed!.input_tokens! + resumed!.cache_creation_tokens!,
    );
    expect(status).toContain(
      `- Resuming saved an estimated ${k(saved)} billed-equivalent input tokens over 1 turn (they used ${k(used)}; started fresh, about ${k(saved + used)}).`,
    );
    expect(status).toContain("Next turn: **resumes** session");
  });
});
