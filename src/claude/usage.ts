import type { RunEvidence } from "./run-evidence.js";
import { tokenUsage } from "./run-evidence.js";
import type { RunUsage, TokenUsage } from "../agent-cli/runtime-adapter.js";

/**
 * Usage of one run from the best evidence there is: the result line's per-model totals
 * (`modelUsage`, which also carry each model's cost and context window), else its `usage`,
 * else the sum of the model calls seen (the result line never came).
 */
export function summarizeUsage(evidence: RunEvidence, wallMs: number): RunUsage {
  const result = evidence.result;
  const perModel = Object.entries(result?.modelUsage ?? {});
  let totals: TokenUsage;
  let costUsd: number;
  let model: string | null = null;
  let contextWindow: number | null = null;

  if (perModel.length > 0) {
    totals = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 };
    costUsd = 0;
    let topCost = -1;
    for (const [name, u] of perModel) {
      totals.inputTokens += u.inputTokens ?? 0;
      totals.outputTokens += u.outputTokens ?? 0;
      totals.cacheReadTokens += u.cacheReadInputTokens ?? 0;
      totals.cacheCreationTokens += u.cacheCreationInputTokens ?? 0;
      costUsd += u.costUSD ?? 0;
      if ((u.costUSD ?? 0) > topCost) {
        topCost = u.costUSD ?? 0;
        model = name;
      }
    }
    // The session's own model did the work, even if a helper model cost more.
    const initModel = evidence.init?.model;
    if (initModel && result?.modelUsage?.[initModel]) model = initModel;
    contextWindow = (model && result?.modelUsage?.[model]?.contextWindow) || null;
  } else if (result?.usage) {
    totals = tokenUsage(result.usage);
    costUsd = result.total_cost_usd ?? 0;
  } else {
    totals = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 };
    for (const { usage } of evidence.callUsage.values()) {
      totals.inputTokens += usage.inputTokens;
      totals.outputTokens += usage.outputTokens;
      totals.cacheReadTokens += usage.cacheReadTokens;
      totals.cacheCreationTokens += usage.cacheCreationTokens;
    }
    costUsd = result?.total_cost_usd ?? 0;
  }

  return {
    ...totals,
    costUsd,
    numTurns: result?.num_turns ?? evidence.callUsage.size,
    durationMs: result?.duration_ms ?? wallMs,
    model: model ?? evidence.lastCallModel ?? evidence.init?.model ?? null,
    contextTokens: contextTokens(evidence),
    contextWindow,
  };
}

function contextTokens(evidence: RunEvidence): number | null {
  const last = evidence.lastCallUsage;
  if (last) return last.inputTokens + last.cacheReadTokens + last.cacheCreationTokens;
  // The result's usage is summed over calls, so it measures the context only for one call.
  const result = evidence.result;
  if (result?.usage && (result.num_turns ?? 0) <= 1) {
    const u = tokenUsage(result.usage);
    const sum = u.inputTokens + u.cacheReadTokens + u.cacheCreationTokens;
    return sum > 0 ? sum : null;
  }
  return null;
}
