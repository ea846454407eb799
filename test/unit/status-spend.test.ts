import { AGENT_CLIS } from "../../src/cli-registry.js";
import { describe, expect, it } from "vitest";
import { parseRepoConfig, type RepoConfig } from "../../src/config/repo-config.js";
import { renderSpend, type SpendFigures } from "../../src/intake/status.js";

function config(raw: unknown): RepoConfig {
  const parsed = parseRepoConfig(raw, AGENT_CLIS);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.config;
}

const now = new Date("2026-07-15T10:00:00Z");
const figures = (over: Partial<SpendFigures> = {}): SpendFigures => ({
  conversation: { totalUsd: 0, turns: 0, countedUsd: 0, countedTurns: 0, resetAtTask: null },
  savings: { resumedTurns: 0, resumedInputTokens: 0, savedTokens: 0, pastCacheTurns: 0 },
  session: null,
  ...over,
});

describe("/status: spend, context and savings lines", () => {
  it("a conversation with no turn", () => {
    const c = config(undefined);
    expect(renderSpend(figures(), c.agents.tether, c, now)).toEqual([
      "- Spend: $0.0000 over 0 turns.",
    ]);
  });

  it("spend, the limits and what is left; context; the savings estimate", () => {
    const c = config({ agents: { tether: { turnLimitUsd: 0.5, conversationLimitUsd: 1 } } });
    const lines = renderSpend(
      figures({
        conversation: {
          totalUsd: 0.1261,
          turns: 3,
          countedUsd: 0.1261,
          countedTurns: 3,
          resetAtTask: null,
        },
        savings: {
          resumedTurns: 2,
          resumedInputTokens: 9_600,
          savedTokens: 7_100,
          pastCacheTurns: 0,
        },
        session: { sessionId: "d3526fa6-dfe2", contextTokens: 31_200, contextWindow: 200_000 },
      }),
      c.agents.tether,
      c,
      now,
    );
    expect(lines).toEqual([
      "- Spend: $0.1261 over 3 turns; the conversation limit is $1.00 ($0.8739 left); at most $0.50 a turn.",
      "- Context: 31.2k tokens of 200k (16%) in session `d3526fa6` after its last turn; it is resumed while under 80% of the window, compacted first past it.",
      expect.stringMatching(
        /^- Resuming saved an estimated 7,100 billed-equivalent input tokens over 2 turns \(they used 9,600; started fresh, about 16\.7k\)\. Estimated by the savings benchmark's accounting/,
      ),
    ]);
  });

  it("the context line says what happens past the budget: compacted (Claude), afresh (Codex, or compact off)", () => {
    const session = { sessionId: "d3526fa6-dfe2", contextTokens: 170_000, contextWindow: 200_000 };
    const line = (raw: unknown, agent: string) => {
      const c = config(raw);
      return renderSpend(figures({ session }), c.agents[agent], c, now).find((l) =>
        l.startsWith("- Context:"),
      );
    };
    expect(line(undefined, "tether")).toMatch(
      /85%\).*under 80% of the window, compacted first past it\.$/,
    );
    expect(line({ resume: { compact: false } }, "tether")).toMatch(/, started afresh past it\.$/);
    expect(line({ agents: { coder: { cli: "codex" } } }, "coder")).toMatch(
      /, started afresh past it\.$/,
    );
  });

  it("a reached conversation limit says the next turn will not run", () => {
    const c = config({ agents: { tether: { conversationLimitUsd: 0.1 } } });
    const [line] = renderSpend(
      figures({
        conversation: {
          totalUsd: 0.1081,
          turns: 1,
          countedUsd: 0.1081,
          countedTurns: 1,
          resetAtTask: null,
        },
      }),
      c.agents.tether,
      c,
      now,
    );
    expect(line).toBe(
      "- Spend: $0.1081 over 1 turn; the conversation limit of $0.10 is reached: the next turn will not run.",
    );
  });

  it("with /fresh resetting the count: since the /fresh turn, and in all", () => {
    const c = config({
      agents: { tether: { conversationLimitUsd: 1 } },
      spend: { freshResetsConversation: true },
    });
    const [line] = renderSpend(
      figures({
        conversation: {
          totalUsd: 1.3,
          turns: 5,
          countedUsd: 0.2,
          countedTurns: 2,
          resetAtTask: 41,
        },
      }),
      c.agents.tether,
      c,
      now,
    );
    expect(line).toBe(
      "- Spend: $0.2000 over 2 turns since the `/fresh` turn (task 41); $1.30 over 5 turns in all; the conversation limit is $1.00 ($0.8000 left).",
    );
  });

  it("the month's spend where a monthly limit is set", () => {
    const c = config({ spend: { repositoryMonthlyUsd: 300, installationMonthlyUsd: 1000 } });
    const lines = renderSpend(
      figures({ repositoryMonthUsd: 12.5, installationMonthUsd: 400 }),
      c.agents.tether,
      c,
      now,
    );
    expect(lines.slice(1)).toEqual([
      "- This repository: $12.50 of its $300.00 for July 2026 (UTC).",
      "- This installation: $400.00 of its $1000.00 for July 2026 (UTC).",
    ]);
  });

  it("says so when nothing resumed yet", () => {
    const c = config(undefined);
    const lines = renderSpend(
      figures({
        conversation: {
          totalUsd: 0.1,
          turns: 1,
          countedUsd: 0.1,
          countedTurns: 1,
          resetAtTask: null,
        },
      }),
      c.agents.tether,
      c,
      now,
    );
    expect(lines.at(-1)).toBe("- Resuming has saved nothing yet: no turn here resumed.");
  });
});
