import { AGENT_CLIS } from "../../src/cli-registry.js";
import { describe, expect, it } from "vitest";
import { chooseCacheTtl } from "../../src/core/cache-ttl.js";
import { cacheTtlEnv } from "../../src/claude/claude-cli.js";
import { parseRepoConfig } from "../../src/config/repo-config.js";

const now = new Date("2026-11-27T12:00:00Z");
const ago = (min: number) => new Date(now.getTime() - min * 60_000);

describe("chooseCacheTtl", () => {
  it.each([
    // setting, previous turn (minutes ago; null: a first turn), automatic, chosen
    ["5m", 2, false, "5m"],
    ["5m", null, true, "5m"],
    ["1h", null, false, "1h"],
    ["1h", 600, false, "1h"],
    ["auto", null, false, "5m"], // a first turn on a quiet issue
    ["auto", null, true, "1h"], // an automatic turn (a CI loop's) is followed soon
    ["auto", 3, false, "1h"],
    ["auto", 60, false, "1h"], // within the hour, the bound included
    ["auto", 61, false, "5m"], // the conversation went quiet
    ["auto", 24 * 60, false, "5m"],
    [undefined, 10, false, "1h"], // an old snapshot without the setting: auto
    [undefined, null, false, "5m"],
  ] as const)(
    "%s, previous turn %s min ago, automatic %s → %s",
    (setting, min, automatic, want) => {
      expect(
        chooseCacheTtl(setting, {
          previousTurnAt: min === null ? null : ago(min),
          now,
          automatic,
        }),
      ).toBe(want);
    },
  );
});

describe("cacheTtlEnv: the lifetime as the Claude CLI takes it", () => {
  it.each([
    ["1h", { ENABLE_PROMPT_CACHING_1H: "1", CLAUDE_CODE_PROMPT_CACHE_TTL: "1h" }],
    // said explicitly, so an operator's CLAUDE_CODE_PROMPT_CACHE_TTL never decides it
    ["5m", { CLAUDE_CODE_PROMPT_CACHE_TTL: "5m" }],
    [undefined, {}],
  ] as const)("%s", (ttl, env) => expect(cacheTtlEnv(ttl)).toEqual(env));
});

describe("agents.<name>.cacheTtl", () => {
  it.each([
    [undefined, "auto"],
    ["5m", "5m"],
    ["1h", "1h"],
    ["auto", "auto"],
  ] as const)("%s → %s", (value, want) => {
    const r = parseRepoConfig(
      {
        agents: { tether: value === undefined ? {} : { cacheTtl: value } },
      },
      AGENT_CLIS,
    );
    expect(r.ok && r.config.agents.tether!.cacheTtl).toBe(want);
  });

  it("refuses another lifetime, saying which it takes", () => {
    const r = parseRepoConfig({ agents: { tether: { cacheTtl: "24h" } } }, AGENT_CLIS);
    expect(r.ok).toBe(false);
    expect(JSON.stringify(!r.ok && r.problems)).toContain("must be 5m, 1h or auto");
  });
});
