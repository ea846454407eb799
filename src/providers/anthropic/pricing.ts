/**
 * What a Claude model call cost, estimated by Tether: the egress proxy prices every call it
 * lets through (src/sandbox/model-meter.ts), the agent's own included, which the CLI's report
 * never holds. Anthropic's list prices per million tokens as known when this was written; a
 * cache read is 0.1× the input price and a cache write 1.25× (the five-minute cache; a one-hour
 * write costs more, and long-context surcharges are not modelled: the CLI's own figure, when
 * larger, is kept, see src/agent-cli/cli-run.ts).
 *
 * A model this table does not know is priced as the dearest one, so that an agent cannot spend
 * cheaply in the count by naming a model Tether has not heard of.
 */
import type { MeteredUsage } from "../../sandbox/model-meter.js";

export interface AnthropicPrice {
  /** USD per million input tokens. */
  input: number;
  /** USD per million output tokens. */
  output: number;
}

/** Longest matching prefix wins. */
export const ANTHROPIC_PRICES: ReadonlyArray<[prefix: string, price: AnthropicPrice]> = [
  ["claude-opus-4-0", { input: 15, output: 75 }],
  ["claude-opus-4-1", { input: 15, output: 75 }],
  ["claude-opus-4-2025", { input: 15, output: 75 }],
  ["claude-opus-4", { input: 5, output: 25 }],
  ["claude-3-opus", { input: 15, output: 75 }],
  ["claude-sonnet-4", { input: 3, output: 15 }],
  ["claude-3-7-sonnet", { input: 3, output: 15 }],
  ["claude-3-5-sonnet", { input: 3, output: 15 }],
  ["claude-haiku-4", { input: 1, output: 5 }],
  ["claude-3-5-haiku", { input: 0.8, output: 4 }],
  ["claude-3-haiku", { input: 0.25, output: 1.25 }],
];

/** The dearest price in the table: what an unknown model is counted at. */
export const UNKNOWN_MODEL_PRICE: AnthropicPrice = { input: 15, output: 75 };

export const CACHE_READ_FACTOR = 0.1;
export const CACHE_WRITE_FACTOR = 1.25;

export function anthropicPriceOf(model: string | null | undefined): AnthropicPrice {
  // The CLI names a model's 1M-context variant `model[1m]`; the API is sent the model.
  const name = (model ?? "").toLowerCase().replace(/\[.*\]$/, "");
  let best: [string, AnthropicPrice] | undefined;
  for (const row of ANTHROPIC_PRICES) {
    if (name.startsWith(row[0]) && (!best || row[0].length > best[0].length)) best = row;
  }
  return best?.[1] ?? UNKNOWN_MODEL_PRICE;
}

/** USD for one call's usage. */
export function anthropicCostUsd(u: MeteredUsage): number {
  const p = anthropicPriceOf(u.model);
  return (
    (u.inputTokens * p.input +
      u.cacheCreationTokens * p.input * CACHE_WRITE_FACTOR +
      u.cacheReadTokens * p.input * CACHE_READ_FACTOR +
      u.outputTokens * p.output) /
    1_000_000
  );
}
