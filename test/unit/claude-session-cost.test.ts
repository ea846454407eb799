import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ownResult, readCostBefore } from "../../src/claude/session-cost.js";
import type { ResultLine } from "../../src/claude/stream-schema.js";

// Shapes as Claude Code 2.1.332 wrote them (docs/claude-cli-facts.md, "Claude Code 2.1.332").
const ID = "0a7235bc-494c-4a95-91ba-de2bcf8319dc";
const models = (cost: number, creation: number, n: number) => ({
  "claude-sonnet-4-5": {
    inputTokens: n,
    outputTokens: 6 * n,
    thinkingTokens: 0,
    cacheReadInputTokens: 0,
    cacheCreationInputTokens: creation,
    webSearchRequests: 0,
    costUSD: cost,
  },
});
const costState = (cost: number, creation: number, n: number, sessionId = ID) =>
  JSON.stringify({
    type: "cost-state",
    sessionId,
    totalCostUSD: cost,
    totalAPIDuration: 101,
    modelUsage: models(cost, creation, n),
    hasUnknownModelCost: false,
  });

function file(lines: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-cost-"));
  const f = path.join(dir, `${ID}.jsonl`);
  fs.writeFileSync(f, lines.join("\n") + "\n");
  return f;
}

const result = (cost: number, creation: number, n: number): ResultLine => ({
  type: "result",
  subtype: "success",
  is_error: false,
  num_turns: 1,
  total_cost_usd: cost,
  modelUsage: {
    "claude-sonnet-4-5": {
      ...models(cost, creation, n)["claude-sonnet-4-5"],
      contextWindow: 200000,
    },
  },
});

describe("readCostBefore", () => {
  it("takes the last readable cost-state line of the session", async () => {
    const f = file([
      '{"type":"user","message":{"content":"{\\"type\\":\\"cost-state\\"}"}}',
      costState(0.0816, 21733, 1),
      '{"type":"assistant"}',
      costState(0.1634, 43519, 2),
      '{"type":"cost-state","totalCostUSD":"garbage"}',
      costState(9, 9, 9, "another-session"),
      '{"type":"last-prompt"}',
    ]);
    expect(await readCostBefore(f, ID)).toEqual({
      totalUsd: 0.1634,
      perModel: {
        "claude-sonnet-4-5": {
          inputTokens: 2,
          outputTokens: 12,
          cacheReadInputTokens: 0,
          cacheCreationInputTokens: 43519,
          costUSD: 0.1634,
        },
      },
    });
  });

  it("none in a file a CLI without them wrote (2.1.197)", async () => {
    expect(await readCostBefore(file(['{"type":"user"}', '{"type":"assistant"}']), ID)).toBe(
      undefined,
    );
  });
});

describe("ownResult", () => {
  const before = {
    totalUsd: 0.1634,
    perModel: {
      "claude-sonnet-4-5": {
        inputTokens: 2,
        outputTokens: 12,
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 43519,
        costUSD: 0.1634,
      },
    },
  };

  it("a session's totals (2.1.332 on a resume) become the run's own", () => {
    const own = ownResult(result(0.2454, 65358, 3), before);
    expect(own.total_cost_usd).toBeCloseTo(0.082, 6);
    expect(own.modelUsage?.["claude-sonnet-4-5"]).toMatchObject({
      inputTokens: 1,
      outputTokens: 6,
      cacheCreationInputTokens: 21839,
      contextWindow: 200000,
    });
    expect(own.modelUsage?.["claude-sonnet-4-5"]?.costUSD).toBeCloseTo(0.082, 6);
  });

  it("a run's own totals (2.1.197) are left alone", () => {
    const line = result(0.0818, 21839, 1);
    expect(ownResult(line, before)).toBe(line);
    expect(ownResult(line, undefined)).toBe(line);
  });

  it("a model the run did not call is left out; one only this run called is kept", () => {
    const line = result(0.2454, 65358, 3);
    line.modelUsage = {
      ...line.modelUsage,
      "claude-haiku-4-5": { inputTokens: 5, outputTokens: 1, costUSD: 0.001 },
    };
    const withOld = {
      totalUsd: 0.1634,
      perModel: {
        ...before.perModel,
        "claude-opus-4-1": {
          inputTokens: 0,
          outputTokens: 0,
          cacheReadInputTokens: 0,
          cacheCreationInputTokens: 0,
          costUSD: 0,
        },
      },
    };
    // claude-opus-4-1 is in the earlier totals but not in the result: not cumulative, left alone.
    expect(ownResult(line, withOld)).toBe(line);
    const own = ownResult(line, before);
    expect(Object.keys(own.modelUsage ?? {}).sort()).toEqual([
      "claude-haiku-4-5",
      "claude-sonnet-4-5",
    ]);
  });
});
