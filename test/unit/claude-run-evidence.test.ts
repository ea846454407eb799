import { describe, expect, it } from "vitest";
import { summarizeUsage } from "../../src/claude/usage.js";
import { evidenceOf, fixtureLines } from "../helpers/fake-claude-replay.js";

const A = "claude-code-2.1.197";
const R = "recorded-by-adapter";
const init = { type: "system", subtype: "init", session_id: "s-1", model: "claude-sonnet-4-5" };
const assistant = (
  id: string,
  content: object[],
  usage?: object,
  extra: Record<string, unknown> = {},
) => ({
  type: "assistant",
  message: { id, model: "claude-sonnet-4-5", content, ...(usage ? { usage } : {}) },
  parent_tool_use_id: null,
  ...extra,
});

describe("events from the stream", () => {
  it("a fresh turn: init first with the session id, then text, then the result", () => {
    const { events } = evidenceOf(fixtureLines(`${A}/fresh-turn.jsonl`));
    // A `usage` event (tokens and cost so far, for the live view) comes before each call's blocks.
    expect(events.map((e) => e.type)).toEqual(["init", "usage", "text", "result"]);
    expect(events[0]).toEqual({
      type: "init",
      sessionId: "d3526fa6-dfe2-405c-ad61-19274b86848a",
      model: "claude-sonnet-4-5",
      cwd: "/srv/workspaces/acme/widgets/issue-7/claude",
      cliVersion: "2.1.197",
      permissionMode: "default",
      tools: expect.arrayContaining(["Bash", "Read"]) as string[],
      // The recorded CLI ran with no MCP server, and said so.
      mcpServers: [],
    });
    expect(events[1]).toMatchObject({ type: "usage", costUsd: expect.any(Number) });
    expect(events[2]).toEqual({
      type: "text",
      text: "reply#2 seen_messages=1",
      parentToolUseId: null,
    });
    expect(events[3]).toMatchObject({
      type: "result",
      subtype: "success",
      isError: false,
      numTurns: 1,
    });
  });

  it("a tool turn: tool_use and its result, and the evidence that a tool ran", () => {
    const { events, evidence } = evidenceOf(fixtureLines(`${R}/tool-use-turn.jsonl`));
    expect(events.map((e) => e.type)).toEqual([
      "init",
      "usage",
      "tool_use",
      "tool_result",
      "usage",
      "text",
      "result",
    ]);
    expect(events[2]).toMatchObject({
      type: "tool_use",
      name: "Bash",
      input: { command: "echo hello" },
    });
    expect(events[3]).toMatchObject({ type: "tool_result", isError: false, output: "hello" });
    // The second call's figures add to the first's.
    const usages = events.filter((e) => e.type === "usage");
    expect(usages[1]!.outputTokens).toBeGreaterThan(usages[0]!.outputTokens);
    expect(usages[1]!.costUsd).toBeGreaterThan(usages[0]!.costUsd!);
    expect(evidence.toolUses).toBe(1);
  });

  it("no tool ran on a plain text turn", () => {
    expect(evidenceOf(fixtureLines(`${A}/fresh-turn.jsonl`)).evidence.toolUses).toBe(0);
  });

  it("api_retry and compaction are reported", () => {
    const retries = evidenceOf(fixtureLines(`${A}/auth-failure-retrying-killed-at-60s.jsonl`));
    expect(retries.events[1]).toMatchObject({
      type: "api_retry",
      attempt: 1,
      maxRetries: 10,
      errorStatus: 401,
      error: "authentication_failed",
    });
    expect(retries.evidence.authRetry).toEqual({ status: 401, error: "authentication_failed" });

    const compacted = evidenceOf(fixtureLines(`${R}/resume-compacted-after-prompt-too-long.jsonl`));
    expect(compacted.events.find((e) => e.type === "compacted")).toEqual({
      type: "compacted",
      trigger: "auto",
      preTokens: 28882,
      postTokens: 648,
    });
  });

  it("/compact on a resumed run: compacted (manual) only when the CLI printed compact_boundary", () => {
    const ok = evidenceOf(fixtureLines(`${R}/compact-success.jsonl`));
    expect(ok.events.map((e) => e.type)).toEqual(["init", "compacted", "result"]);
    expect(ok.events[1]).toEqual({
      type: "compacted",
      trigger: "manual",
      preTokens: 28822,
      postTokens: 644,
    });
    expect(ok.events[2]).toMatchObject({ type: "result", isError: false, text: "", numTurns: 0 });
    // The summary request is billed: the result's modelUsage carries it (its usage is zeros).
    expect(summarizeUsage(ok.evidence, 0).costUsd).toBeCloseTo(0.013608, 6);

    for (const name of ["compact-not-enough-messages", "compact-failed-context-limit"]) {
      const refused = evidenceOf(fixtureLines(`${R}/${name}.jsonl`));
      expect(refused.evidence.compactions).toBe(0);
      expect(refused.events.find((e) => e.type === "result")).toMatchObject({
        subtype: "success",
        isError: false,
      });
    }
  });

  it("only the first init names the session", () => {
    const { events, evidence } = evidenceOf([init, { ...init, session_id: "s-2" }]);
    expect(events.filter((e) => e.type === "init")).toHaveLength(1);
    expect(evidence.init?.sessionId).toBe("s-1");
  });

  it("malformed blocks are skipped, the good ones in the same line kept", () => {
    const { events } = evidenceOf([
      assistant("m1", [
        { type: "text" }, // no text
        { type: "tool_use", name: "Bash" }, // no id
        { type: "text", text: "kept" },
        { type: "thinking", thinking: "…" },
      ]),
    ]);
    expect(events).toEqual([{ type: "text", text: "kept", parentToolUseId: null }]);
  });

  it("sub-agent messages carry their parent tool call", () => {
    const { events, evidence } = evidenceOf([
      assistant("m1", [{ type: "text", text: "inner" }], undefined, {
        parent_tool_use_id: "toolu_1",
      }),
    ]);
    expect(events[0]).toMatchObject({ type: "text", parentToolUseId: "toolu_1" });
    expect(evidence.lastText).toBeUndefined();
  });
});

describe("summarizeUsage", () => {
  it("takes modelUsage from the result line (fresh-turn fixture)", () => {
    const { evidence } = evidenceOf(fixtureLines(`${A}/fresh-turn.jsonl`));
    expect(summarizeUsage(evidence, 999)).toEqual({
      inputTokens: 100,
      outputTokens: 5,
      cacheReadTokens: 0,
      cacheCreationTokens: 0,
      costUsd: 0.000375,
      numTurns: 1,
      durationMs: 249,
      model: "claude-sonnet-4-5",
      contextTokens: 100,
      contextWindow: 200000,
    });
  });

  it("a run stopped by --max-budget-usd: its result's usage holds the first call only, modelUsage the whole run", () => {
    const lines = fixtureLines(`${R}/max-budget-before-tool.jsonl`);
    const result = JSON.parse(lines.at(-1)!) as { usage: { cache_read_input_tokens: number } };
    expect(result.usage.cache_read_input_tokens).toBe(0); // the second call read 28,801 from cache
    const { evidence, events } = evidenceOf(lines);
    expect(events.map((e) => e.type)).toEqual([
      "init",
      "usage",
      "tool_use",
      "tool_result",
      "usage",
      "tool_use",
      "result",
    ]);
    expect(summarizeUsage(evidence, 1)).toMatchObject({
      inputTokens: 2,
      cacheReadTokens: 28801,
      cacheCreationTokens: 28882,
      costUsd: 0.1173138,
      numTurns: 2,
    });
  });

  it("sums several models and names the session's own model", () => {
    const { evidence } = evidenceOf([
      init,
      assistant("m1", [{ type: "text", text: "a" }], {
        input_tokens: 10,
        cache_read_input_tokens: 5000,
        cache_creation_input_tokens: 300,
        output_tokens: 1,
      }),
      {
        type: "result",
        subtype: "success",
        is_error: false,
        num_turns: 3,
        duration_ms: 1234,
        total_cost_usd: 9,
        usage: { input_tokens: 1, output_tokens: 1 },
        modelUsage: {
          "claude-haiku-4-5": {
            inputTokens: 1000,
            outputTokens: 10,
            costUSD: 0.5,
            contextWindow: 200000,
          },
          "claude-sonnet-4-5": {
            inputTokens: 20,
            outputTokens: 30,
            cacheReadInputTokens: 5000,
            cacheCreationInputTokens: 300,
            costUSD: 0.25,
            contextWindow: 1000000,
          },
        },
      },
    ]);
    expect(summarizeUsage(evidence, 1)).toEqual({
      inputTokens: 1020,
      outputTokens: 40,
      cacheReadTokens: 5000,
      cacheCreationTokens: 300,
      costUsd: 0.75,
      numTurns: 3,
      durationMs: 1234,
      model: "claude-sonnet-4-5",
      contextTokens: 5310,
      contextWindow: 1000000,
    });
  });

  it("falls back to the result's usage when modelUsage is empty (prompt-too-long fixture)", () => {
    const { evidence } = evidenceOf(fixtureLines(`${A}/prompt-too-long.jsonl`));
    const usage = summarizeUsage(evidence, 5);
    expect(usage).toMatchObject({ inputTokens: 0, costUsd: 0, numTurns: 1, durationMs: 146 });
    // The only assistant line is the CLI's own error message: it says nothing about context.
    expect(usage.contextTokens).toBeNull();
    expect(usage.model).toBe("claude-sonnet-4-5");
  });

  it("without a result line, sums the calls seen, once per message", () => {
    const u = {
      input_tokens: 7,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 3,
      output_tokens: 1,
    };
    const { evidence } = evidenceOf([
      init,
      assistant("m1", [{ type: "tool_use", id: "t1", name: "Bash", input: {} }], u),
      assistant("m1", [{ type: "text", text: "same message, second line" }], u),
      assistant("m2", [{ type: "text", text: "next call" }], {
        ...u,
        cache_read_input_tokens: 200,
      }),
    ]);
    expect(summarizeUsage(evidence, 4321)).toMatchObject({
      inputTokens: 14,
      cacheReadTokens: 300,
      cacheCreationTokens: 6,
      costUsd: 0,
      numTurns: 2,
      durationMs: 4321,
      model: "claude-sonnet-4-5",
      contextTokens: 210,
      contextWindow: null,
    });
  });

  it("context is the last top-level call's, not a sub-agent's", () => {
    const { evidence } = evidenceOf([
      init,
      assistant("m1", [{ type: "text", text: "top" }], {
        input_tokens: 1,
        cache_read_input_tokens: 900,
      }),
      assistant(
        "m2",
        [{ type: "text", text: "sub" }],
        { input_tokens: 50000 },
        { parent_tool_use_id: "toolu_9" },
      ),
    ]);
    expect(summarizeUsage(evidence, 0).contextTokens).toBe(901);
  });

  it("nothing known: zeros and nulls, wall-clock duration", () => {
    const { evidence } = evidenceOf([]);
    expect(summarizeUsage(evidence, 77)).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheCreationTokens: 0,
      costUsd: 0,
      numTurns: 0,
      durationMs: 77,
      model: null,
      contextTokens: null,
      contextWindow: null,
    });
  });
});
