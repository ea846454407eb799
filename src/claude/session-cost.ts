import fs from "node:fs/promises";
import { z } from "zod";
import type { ResultLine } from "./stream-schema.js";

/**
 * What a session had spent before this run, as the CLI filed it. Seen with 2.1.332 (not with
 * 2.1.197): the session file holds `{"type":"cost-state",…}` lines with the session's running
 * totals, the CLI restores them on `--resume`, and a resumed run's result line then reports
 * `total_cost_usd` and `modelUsage` for the whole session, not for the run (its `usage` and
 * `num_turns` stay the run's own). docs/claude-cli-facts.md, "Claude Code 2.1.332".
 */
export interface CostBefore {
  totalUsd: number;
  perModel: Record<string, ModelTotals>;
}

interface ModelTotals {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
  costUSD: number;
}

const amount = z.number().finite().nonnegative();
const CostState = z.object({
  type: z.literal("cost-state"),
  sessionId: z.string().optional(),
  totalCostUSD: amount,
  modelUsage: z.record(
    z.string(),
    z.object({
      inputTokens: amount.catch(0),
      outputTokens: amount.catch(0),
      cacheReadInputTokens: amount.catch(0),
      cacheCreationInputTokens: amount.catch(0),
      costUSD: amount.catch(0),
    }),
  ),
});

const MARK = '{"type":"cost-state"';

/** The last readable cost-state line of `sessionId` in `file`; undefined when there is none. */
export async function readCostBefore(
  file: string,
  sessionId: string,
): Promise<CostBefore | undefined> {
  const text = await fs.readFile(file, "utf8");
  for (
    let at = text.lastIndexOf(MARK);
    at >= 0;
    at = at > 0 ? text.lastIndexOf(MARK, at - 1) : -1
  ) {
    if (at > 0 && text[at - 1] !== "\n") continue;
    const end = text.indexOf("\n", at);
    let parsed: ReturnType<typeof CostState.safeParse>;
    try {
      parsed = CostState.safeParse(JSON.parse(text.slice(at, end < 0 ? undefined : end)));
    } catch {
      continue;
    }
    if (!parsed.success) continue;
    if (parsed.data.sessionId !== undefined && parsed.data.sessionId !== sessionId) continue;
    return { totalUsd: parsed.data.totalCostUSD, perModel: parsed.data.modelUsage };
  }
  return undefined;
}

/**
 * The result line's totals for this run alone: the session's earlier totals taken off when the
 * line carries them (every model's figures at least what was spent before; a CLI that reports
 * the run alone, like 2.1.197, reports less and is left as it is).
 */
export function ownResult(result: ResultLine, before: CostBefore | undefined): ResultLine {
  if (!before || before.totalUsd <= 0 || (result.total_cost_usd ?? 0) < before.totalUsd) {
    return result;
  }
  const usage = result.modelUsage ?? {};
  const cumulative = Object.entries(before.perModel).every(([model, b]) => {
    const u = usage[model];
    return (
      u !== undefined &&
      (u.costUSD ?? 0) >= b.costUSD &&
      (u.inputTokens ?? 0) >= b.inputTokens &&
      (u.outputTokens ?? 0) >= b.outputTokens &&
      (u.cacheReadInputTokens ?? 0) >= b.cacheReadInputTokens &&
      (u.cacheCreationInputTokens ?? 0) >= b.cacheCreationInputTokens
    );
  });
  if (!cumulative) return result;
  const minus = (a: number | null | undefined, b: number) => Math.max(0, (a ?? 0) - b);
  const modelUsage: NonNullable<ResultLine["modelUsage"]> = {};
  for (const [model, u] of Object.entries(usage)) {
    const b = before.perModel[model];
    if (!b) {
      modelUsage[model] = u;
      continue;
    }
    const left = {
      ...u,
      inputTokens: minus(u.inputTokens, b.inputTokens),
      outputTokens: minus(u.outputTokens, b.outputTokens),
      cacheReadInputTokens: minus(u.cacheReadInputTokens, b.cacheReadInputTokens),
      cacheCreationInputTokens: minus(u.cacheCreationInputTokens, b.cacheCreationInputTokens),
      costUSD: minus(u.costUSD, b.costUSD),
    };
    // A model this run did not call is no part of its usage.
    if (
      left.inputTokens +
        left.outputTokens +
        left.cacheReadInputTokens +
        left.cacheCreationInputTokens >
      0
    )
      modelUsage[model] = left;
  }
  return {
    ...result,
    total_cost_usd: minus(result.total_cost_usd, before.totalUsd),
    modelUsage,
  };
}
