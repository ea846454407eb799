import { describe, expect, it } from "vitest";
import {
  conversationPath,
  conversationUrl,
  parseConversationPath,
} from "../../src/core/conversation-path.js";
import { redact } from "../../src/core/redact.js";
import {
  explainFailure,
  findTaskMarker,
  MAX_ANSWER,
  renderAnswer,
  renderFailure,
  renderFooter,
  renderRefusal,
  renderTracking,
} from "../../src/runner/render/thread-comments.js";

const usage = {
  model: "claude-sonnet-4-5",
  inputTokens: 120,
  outputTokens: 450,
  cacheReadTokens: 10_100,
  cacheCreationTokens: 2_000,
  contextTokens: 12_220,
  costUsd: 0.01234,
  numTurns: 3,
  durationMs: 14_230,
};

describe("thread comments", () => {
  it("tracking comment says who works, resumed or fresh and why, and carries the task marker", () => {
    const t0 = new Date("2026-11-22T10:00:00Z");
    const body = renderTracking({
      taskId: 42,
      agent: "tether",
      resumed: false,
      reason: "history_edited",
      tools: ["Read", "Bash"],
      lastText: "Looking at\nsplit()",
      startedAt: t0,
      now: new Date(t0.getTime() + 12_000),
    });
    expect(body).toMatch(/^⏳ \*\*tether\*\* is working on this\./);
    expect(body).toContain(
      "fresh session: a comment in the session's history (or the issue body) was edited or deleted",
    );
    expect(body).toContain("2 tool calls so far (latest: `Read`, `Bash`)");
    expect(body).toContain("> Looking at split()");
    expect(body).toContain("12s elapsed");
    expect(findTaskMarker(body)).toBe(42);
    expect(
      renderTracking({
        taskId: 1,
        agent: "a",
        resumed: true,
        reason: "resumed",
        tools: [],
        lastText: null,
        startedAt: t0,
        now: t0,
      }),
    ).toContain("🔗 Resuming");
  });

  it("answer = the agent's text, then a footer with session, turns, tokens, cost and duration", () => {
    const body = renderAnswer(7, "All done.", {
      resumed: true,
      reason: "resumed",
      sessionId: "d3526fa6-dfe2-405c",
      usage,
    });
    expect(
      body.startsWith(
        "All done.\n\n---\n<sub>🔗 resumed session · `d3526fa6` · 3 turns · 12.2k in (10.1k cached) / 450 out · $0.0123 · 14.2s</sub>",
      ),
    ).toBe(true);
    expect(findTaskMarker(body)).toBe(7);
    expect(
      renderFooter({ resumed: false, reason: "forced_fresh", sessionId: null, usage: null }),
    ).toBe("<sub>🆕 fresh session (forced_fresh)</sub>");
    expect(
      renderFooter({ resumed: true, reason: "rewound", sessionId: "d3526fa6-dfe2", usage: null }),
    ).toBe("<sub>⏪ rewound session (a comment it had read changed) · `d3526fa6`</sub>");
    // `/model` on a smaller window: which of the two it was, and why.
    const smaller = { sessionId: null, usage: null, smallerWindow: true };
    expect(renderFooter({ ...smaller, resumed: true, reason: "compacted" })).toBe(
      "<sub>🗜️ compacted and resumed session (the turn's model has a smaller context window)</sub>",
    );
    expect(renderFooter({ ...smaller, resumed: false, reason: "context_budget" })).toBe(
      "<sub>🆕 fresh session (context_budget: the turn's model has a smaller context window)</sub>",
    );
    // A task swept before its decision (the answer outbox renders its failure).
    expect(renderFooter({ resumed: false, reason: null, sessionId: null, usage: null })).toBe(
      "<sub>no session started</sub>",
    );
  });

  it("names the turn's model, and says when a /model asked for it", () => {
    const facts = { resumed: true, reason: "resumed" as const, sessionId: "d3526fa6-dfe2", usage };
    expect(renderFooter({ ...facts, model: { name: "claude-sonnet-4-5", requested: false } })).toBe(
      "<sub>🔗 resumed session · `d3526fa6` · `claude-sonnet-4-5` · 3 turns · 12.2k in (10.1k cached) / 450 out · $0.0123 · 14.2s</sub>",
    );
    expect(
      renderFooter({ ...facts, model: { name: "claude-opus-4-1", requested: true } }),
    ).toContain("· `claude-opus-4-1` (/model, this turn only) ·");
    const escalated = renderFooter({
      ...facts,
      model: { name: "claude-opus-4-1", requested: true, escalated: true },
    });
    expect(escalated).toContain("· `claude-opus-4-1` (`escalate`: after a failed CI attempt) ·");
    expect(escalated).not.toContain("/model");
  });

  it("clips answers to what GitHub accepts", () => {
    const body = renderAnswer(1, "x".repeat(100_000), {
      resumed: false,
      reason: "no_prior_session",
      sessionId: null,
      usage: null,
    });
    expect(body.length).toBeLessThan(65_536);
    expect(body).toContain(`cut at ${MAX_ANSWER}`);
  });

  it("explains every failure in plain words with what to do", () => {
    for (const outcome of [
      "poisoned",
      "resume_rejected",
      "auth_failed",
      "timed_out",
      "stalled",
      "cancelled",
      "failed",
      "turn_limit",
      "limit_refused",
    ] as const) {
      const text = explainFailure({
        outcome,
        detail: "exit 1",
        taskId: 9,
        timeoutMinutes: 30,
        stallMinutes: 5,
      });
      expect(text.length).toBeGreaterThan(15);
      expect(text).not.toMatch(/\n\s+at /); // no stack traces
    }
    expect(
      explainFailure({ outcome: "timed_out", detail: null, taskId: 1, timeoutMinutes: 30 }),
    ).toContain("30 minutes");
    expect(explainFailure({ outcome: "auth_failed", detail: null, taskId: 1 })).toContain(
      "ANTHROPIC_API_KEY",
    );
    const codex = explainFailure({ outcome: "auth_failed", detail: null, taskId: 1, cli: "codex" });
    expect(codex).toContain("OPENAI_API_KEY");
    expect(codex).not.toContain("ANTHROPIC");
  });
});

describe("the conversation's link in the footer", () => {
  const base = { resumed: true, reason: "resumed" as const, sessionId: "abcdef0123", usage: null };
  it("links to the conversation's dashboard page, for operators, when there is a public URL", () => {
    const url = conversationUrl("https://tether.example.com/", {
      repo: "octo/widgets",
      issueNumber: 42,
      agent: "tether",
    });
    expect(url).toBe("https://tether.example.com/dashboard/conversations/octo/widgets/42/tether");
    expect(renderFooter({ ...base, chainUrl: url })).toContain(
      `[conversation log (operators only)](${url})`,
    );
    expect(renderFooter(base)).not.toContain("conversation log");
  });

  it("the answer and a failure both carry it", () => {
    const chainUrl = "https://tether.example.com/dashboard/conversations/octo/widgets/42/tether";
    expect(renderAnswer(1, "done", { ...base, chainUrl })).toContain(chainUrl);
    expect(
      renderFailure({ outcome: "failed", detail: null, taskId: 1 }, { ...base, chainUrl }),
    ).toContain(chainUrl);
  });

  it("a URL that would break the Markdown link is left out", () => {
    expect(
      renderFooter({ ...base, chainUrl: "https://x.example/a) [b](https://evil" }),
    ).not.toContain("conversation log");
  });

  it("the path parses back to the key, and nothing else parses", () => {
    const key = { repo: "octo/widgets", issueNumber: 42, agent: "tether" };
    expect(parseConversationPath(conversationPath(key))).toEqual({ kind: "page", key });
    expect(parseConversationPath(conversationPath(key, "/api/conversations"))).toEqual({
      kind: "api",
      key,
    });
    expect(parseConversationPath(`${conversationPath(key)}/transcripts/sess-1`)).toEqual({
      kind: "transcript",
      key,
      sessionId: "sess-1",
    });
    for (const bad of [
      "/dashboard/conversations/octo/widgets/0/tether",
      "/dashboard/conversations/octo/widgets/42",
      "/dashboard/conversations/octo/../42/tether",
      "/dashboard/conversations/octo/widgets/42/Tether",
      "/api/conversations/octo/widgets/42/tether/transcripts/s",
      "/dashboard/conversations/octo/widgets/42/tether/transcripts/../x",
    ])
      expect(parseConversationPath(bad), bad).toBeNull();
  });
});

describe("spend limits in the thread", () => {
  const now = new Date("2026-07-15T10:00:00Z");

  it("a turn stopped at its per-turn limit: the limit, the cost, what to do, the agent's last words; the footer says so too", () => {
    const footer = {
      resumed: false,
      reason: "no_prior_session" as const,
      sessionId: "d3526fa6-dfe2",
      usage: { ...usage, costUsd: 0.1081 },
      turnLimitUsd: 0.01,
      conversation: { spentUsd: 0.1081, limitUsd: 1 },
    };
    const body = renderFailure(
      {
        outcome: "turn_limit",
        detail: "stopped",
        taskId: 5,
        agent: "claude",
        turnLimitUsd: 0.01,
        costUsd: 0.1081,
        lastText: "I read split()\nand found",
      },
      footer,
    );
    expect(body).toMatch(/^💸 The run reached this agent's per-turn spend limit of \$0\.01/);
    expect(body).toContain("after spending $0.1081");
    expect(body).toContain("`agents.claude.turnLimitUsd`");
    expect(body).toContain("> I read split()\n> and found");
    expect(body).toContain("⛔ stopped at the $0.01 turn limit · conversation $0.1081 of $1.00");
    const { turnLimitUsd, ...finished } = footer;
    expect(turnLimitUsd).toBe(0.01);
    expect(renderFooter(finished)).not.toContain("⛔");
  });

  it("the footer keeps the turn's cost, with the conversation's spend when a limit applies", () => {
    const f = renderFooter({
      resumed: true,
      reason: "resumed",
      sessionId: null,
      usage,
      conversation: { spentUsd: 0.5 },
    });
    expect(f).toContain("$0.0123");
    expect(f).toContain("conversation $0.5000</sub>");
  });

  it("a refusal says what was spent, the limit, the setting, and that /fresh does not help when it does not reset", () => {
    const body = renderRefusal({
      taskId: 8,
      agent: "claude",
      mention: "@tether",
      reached: [{ kind: "conversation", spentUsd: 0.1081, limitUsd: 0.1 }],
      freshResets: false,
      now,
    });
    expect(body).toMatch(/^💸 Not run/);
    expect(body).toContain(
      "This conversation (`@tether` on this issue) has spent **$0.1081** of its **$0.10** limit (`agents.claude.conversationLimitUsd`).",
    );
    expect(body).toContain("raise the limit in `.github/tether.yml`");
    expect(body).toContain("`/fresh` does not help");
    expect(body).not.toContain("wait");
    expect(findTaskMarker(body)).toBe(8);
    expect(body).not.toMatch(/(^|\s)@tether\b/); // mentions only inside code: no ping, no trigger
  });

  it("a refusal offers /fresh when it resets the count, and the month's end for a monthly limit", () => {
    const body = renderRefusal({
      taskId: 8,
      agent: "claude",
      mention: "@tether",
      reached: [
        { kind: "conversation", spentUsd: 2, limitUsd: 1 },
        { kind: "repository_month", spentUsd: 300.2, limitUsd: 300 },
        { kind: "installation_month", spentUsd: 1000, limitUsd: 1000 },
      ],
      freshResets: true,
      now,
    });
    expect(body).toContain("Or start over with `@tether /fresh <request>`");
    expect(body).toContain(
      "This repository has spent **$300.20** of its **$300.00** limit for July 2026 (UTC) (`spend.repositoryMonthlyUsd`).",
    );
    expect(body).toContain("**$1000.00** of its **$1000.00** limit");
    expect(body).toContain("`spend.installationMonthlyUsd`");
    expect(body).toContain("starts again on 1 August 2026 (UTC)");
  });
});

describe("session ids in a failure's words (#28)", () => {
  it("are cut to their first eight characters", () => {
    const text = explainFailure({
      outcome: "failed",
      detail:
        "asked to resume session 7c9e6679-7425-40de-944b-e07fc1f90ae7, but the CLI started session 0b6a1c7e-5f2d-4c3b-9a8e-1d2c3b4a5f60",
      taskId: 3,
    });
    expect(text).toContain(
      "asked to resume session 7c9e6679…, but the CLI started session 0b6a1c7e…",
    );
    expect(text).not.toMatch(/7c9e6679-|0b6a1c7e-/);
  });
});

describe("redact", () => {
  const rows: Array<[string, string]> = [
    ["token ghs_abcdefghijklmnopqrstuvwxyz0123456789 here", "token [redacted] here"],
    ["pat github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "pat [redacted]"],
    ["key sk-ant-api03-AbCdEf_123-xyz", "key [redacted]"],
    [
      "https://x-access-token:ghs_secret123@github.com/o/r.git",
      "https://x-access-token:[redacted]@github.com/o/r.git",
    ],
    [
      "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- after",
      "[redacted] after",
    ],
    ["nothing secret here", "nothing secret here"],
  ];
  it.each(rows)("%s", (input, out) => expect(redact(input)).toBe(out));

  it("removes known secrets by value", () => {
    expect(redact("the secret is hunter2hunter2!", ["hunter2hunter2"])).toBe(
      "the secret is [redacted]!",
    );
  });
});
