import { describe, expect, it } from "vitest";
import type { ConversationTurn } from "../../src/sql/spend.js";
import { estimateSavings } from "../../src/spend/savings-estimate.js";
import {
  dayName,
  formatLimit,
  formatSpent,
  monthName,
  monthStart,
  nextMonthStart,
  reachedLimits,
  type LimitSettings,
  type SpentSoFar,
} from "../../src/spend/spend-limits.js";

describe("reachedLimits", () => {
  const none: LimitSettings = { freshResetsConversation: false };
  type Row = {
    name: string;
    limits: LimitSettings;
    spent: SpentSoFar;
    forceFresh?: boolean;
    reached: string[];
  };
  const rows: Row[] = [
    { name: "no limits", limits: none, spent: { conversationUsd: 1e6 }, reached: [] },
    {
      name: "under the conversation limit",
      limits: { ...none, conversationLimitUsd: 1 },
      spent: { conversationUsd: 0.9999 },
      reached: [],
    },
    {
      name: "exactly at the conversation limit: reached",
      limits: { ...none, conversationLimitUsd: 1 },
      spent: { conversationUsd: 1 },
      reached: ["conversation"],
    },
    {
      name: "over it",
      limits: { ...none, conversationLimitUsd: 1 },
      spent: { conversationUsd: 1.2 },
      reached: ["conversation"],
    },
    {
      name: "/fresh, when /fresh does not reset: still reached",
      limits: { ...none, conversationLimitUsd: 1 },
      spent: { conversationUsd: 1.2 },
      forceFresh: true,
      reached: ["conversation"],
    },
    {
      name: "/fresh, when /fresh resets: a new count starts with this turn",
      limits: { conversationLimitUsd: 1, freshResetsConversation: true },
      spent: { conversationUsd: 1.2 },
      forceFresh: true,
      reached: [],
    },
    {
      name: "no /fresh, when /fresh resets: the count since the last reset applies",
      limits: { conversationLimitUsd: 1, freshResetsConversation: true },
      spent: { conversationUsd: 1.2 },
      reached: ["conversation"],
    },
    {
      name: "the repository's month",
      limits: { ...none, repositoryMonthlyUsd: 100 },
      spent: { conversationUsd: 0, repositoryMonthUsd: 100.5 },
      reached: ["repository_month"],
    },
    {
      name: "/fresh never resets a monthly limit",
      limits: { repositoryMonthlyUsd: 100, freshResetsConversation: true },
      spent: { conversationUsd: 0, repositoryMonthUsd: 100 },
      forceFresh: true,
      reached: ["repository_month"],
    },
    {
      name: "the installation's month",
      limits: { ...none, installationMonthlyUsd: 500 },
      spent: { conversationUsd: 0, installationMonthUsd: 499.99 },
      reached: [],
    },
    {
      name: "a monthly limit whose sum was not read is not judged",
      limits: { ...none, installationMonthlyUsd: 500 },
      spent: { conversationUsd: 0 },
      reached: [],
    },
    {
      name: "several at once, most specific first",
      limits: {
        ...none,
        conversationLimitUsd: 1,
        repositoryMonthlyUsd: 10,
        installationMonthlyUsd: 10,
      },
      spent: { conversationUsd: 2, repositoryMonthUsd: 10, installationMonthUsd: 50 },
      reached: ["conversation", "repository_month", "installation_month"],
    },
  ];
  it.each(rows)("$name", ({ limits, spent, forceFresh, reached }) => {
    expect(
      reachedLimits(limits, spent, { forceFresh: forceFresh ?? false }).map((l) => l.kind),
    ).toEqual(reached);
  });

  it("says what was spent and the limit", () => {
    expect(
      reachedLimits(
        { ...none, conversationLimitUsd: 0.1 },
        { conversationUsd: 0.1081 },
        { forceFresh: false },
      ),
    ).toEqual([{ kind: "conversation", spentUsd: 0.1081, limitUsd: 0.1 }]);
  });
});

describe("the month a monthly limit counts (UTC)", () => {
  it.each([
    ["2026-07-15T12:00:00Z", "2026-07-01T00:00:00.000Z", "2026-08-01T00:00:00.000Z", "July 2026"],
    ["2026-07-31T23:59:59Z", "2026-07-01T00:00:00.000Z", "2026-08-01T00:00:00.000Z", "July 2026"],
    ["2026-08-01T00:00:00Z", "2026-08-01T00:00:00.000Z", "2026-09-01T00:00:00.000Z", "August 2026"],
    [
      "2026-12-31T22:00:00-05:00", // already 1 January in UTC
      "2027-01-01T00:00:00.000Z",
      "2027-02-01T00:00:00.000Z",
      "January 2027",
    ],
  ])("%s → from %s until %s (%s)", (now, from, until, name) => {
    const d = new Date(now);
    expect(monthStart(d).toISOString()).toBe(from);
    expect(nextMonthStart(d).toISOString()).toBe(until);
    expect(monthName(d)).toBe(name);
  });

  it("names a day", () => {
    expect(dayName(new Date("2026-08-01T00:00:00Z"))).toBe("1 August 2026");
  });
});

describe("amounts", () => {
  it.each([
    [0, "$0.0000"],
    [0.0089, "$0.0089"],
    [0.10807, "$0.1081"],
    [1, "$1.00"],
    [123.456, "$123.46"],
    [-0.5, "$0.0000"],
  ])("spent %s → %s", (v, text) => expect(formatSpent(v)).toBe(text));

  it.each([
    [0.1, "$0.10"],
    [0.115, "$0.115"],
    [20, "$20.00"],
    [2.5, "$2.50"],
  ])("limit %s → %s", (v, text) => expect(formatLimit(v)).toBe(text));
});

describe("estimateSavings", () => {
  const turn = (over: Partial<ConversationTurn> & { id: number }): ConversationTurn => ({
    resumed: false,
    forceFresh: false,
    sessionId: "s1",
    costUsd: 0.01,
    inputTokens: 10,
    cacheReadTokens: 0,
    cacheCreationTokens: 0,
    promptBytes: 0,
    answerBytes: 0,
    cacheTtl: null,
    startedAt: null,
    finishedAt: null,
    ...over,
  });

  it("no resumed turn: nothing saved", () => {
    expect(estimateSavings([turn({ id: 1, promptBytes: 4000, answerBytes: 400 })])).toEqual({
      resumedTurns: 0,
      resumedInputTokens: 0,
      savedTokens: 0,
      pastCacheTurns: 0,
    });
  });

  it("each resumed turn saves 0.9 × its session's earlier prompts and answers ÷ 4 bytes", () => {
    const est = estimateSavings([
      // fresh: the cold prompt (issue + comment) and its answer
      turn({ id: 1, promptBytes: 12_000, answerBytes: 400 }),
      // resumed: a fresh start would have re-sent 12,400 bytes
      turn({
        id: 2,
        resumed: true,
        promptBytes: 2_600,
        answerBytes: 400,
        inputTokens: 5,
        cacheReadTokens: 30_000,
        cacheCreationTokens: 700,
      }),
      // resumed again: 12,400 + 3,000 bytes
      turn({
        id: 3,
        resumed: true,
        promptBytes: 2_600,
        answerBytes: 400,
        inputTokens: 5,
        cacheReadTokens: 31_000,
        cacheCreationTokens: 800,
      }),
    ]);
    expect(est.resumedTurns).toBe(2);
    expect(est.savedTokens).toBe(Math.round((0.9 * (12_400 + 15_400)) / 4));
    expect(est.resumedInputTokens).toBe(Math.round(0.1 * 61_000 + 10 + 1_500));
  });

  it("counts only the turns of the resumed session: a /fresh session starts its thread anew", () => {
    const est = estimateSavings([
      turn({ id: 1, sessionId: "old", promptBytes: 40_000, answerBytes: 4_000 }),
      turn({ id: 2, sessionId: "new", forceFresh: true, promptBytes: 8_000, answerBytes: 0 }),
      turn({ id: 3, sessionId: "new", resumed: true, promptBytes: 100, answerBytes: 100 }),
    ]);
    expect(est.savedTokens).toBe(Math.round((0.9 * 8_000) / 4));
  });

  it("reads turns in the order they ran, whatever the order given", () => {
    const turns = [
      turn({ id: 2, resumed: true }),
      turn({ id: 1, promptBytes: 4_000, answerBytes: 0 }),
    ];
    expect(estimateSavings(turns).savedTokens).toBe(900);
  });

  it("a resumed turn that came after the lifetime its session's previous turn asked for saved nothing", () => {
    const at = (min: number) => new Date(Date.UTC(2026, 10, 27, 10, min));
    const est = estimateSavings([
      turn({ id: 1, promptBytes: 4_000, cacheTtl: "5m", startedAt: at(0), finishedAt: at(1) }),
      // 9 minutes after a five-minute write: nothing cached any more
      turn({
        id: 2,
        resumed: true,
        promptBytes: 1_000,
        cacheTtl: "1h",
        startedAt: at(10),
        finishedAt: at(11),
      }),
      // 40 minutes after an hour's write: read from the cache
      turn({ id: 3, resumed: true, promptBytes: 1_000, startedAt: at(51), finishedAt: at(52) }),
    ]);
    expect(est).toMatchObject({ resumedTurns: 2, pastCacheTurns: 1 });
    expect(est.savedTokens).toBe(Math.round((0.9 * 5_000) / 4));
  });

  it("turns without sizes (recorded before Tether kept them) add nothing; turns without a session are skipped", () => {
    const est = estimateSavings([
      turn({ id: 1, promptBytes: null, answerBytes: null }),
      turn({ id: 2, sessionId: null, resumed: true }),
      turn({ id: 3, resumed: true }),
    ]);
    expect(est).toMatchObject({ resumedTurns: 1, savedTokens: 0 });
  });
});
