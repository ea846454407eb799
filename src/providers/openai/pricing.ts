/**
 * What a Codex turn cost, estimated: the CLI reports tokens only (docs/codex-cli-facts.md), so
 * Tether prices them from the model with this table. The figures are OpenAI's published list
 * prices per million tokens as known when it was written; they are an estimate (no batch or
 * priority tiers, no regional pricing, and a model missing here is priced as its family). The
 * dashboard and the answer's footer show them as such.
 */

import * as prices from "../../agent-cli/price-table.js";
import type { ModelPrice, PriceTable, TurnTokens } from "../../agent-cli/price-table.js";

/** Longest matching prefix wins. */
export const OPENAI_PRICES: PriceTable = [
  ["gpt-5-nano", { input: 0.05, cachedInput: 0.005, output: 0.4 }],
  ["gpt-5-mini", { input: 0.25, cachedInput: 0.025, output: 2 }],
  ["gpt-5.1-codex-mini", { input: 0.25, cachedInput: 0.025, output: 2 }],
  ["gpt-5-codex", { input: 1.25, cachedInput: 0.125, output: 10 }],
  ["gpt-5.1", { input: 1.25, cachedInput: 0.125, output: 10 }],
  ["gpt-5", { input: 1.25, cachedInput: 0.125, output: 10 }],
  ["gpt-4.1-mini", { input: 0.4, cachedInput: 0.1, output: 1.6 }],
  ["gpt-4.1", { input: 2, cachedInput: 0.5, output: 8 }],
  ["o4-mini", { input: 1.1, cachedInput: 0.275, output: 4.4 }],
  ["o3", { input: 2, cachedInput: 0.5, output: 8 }],
];

/** A model no prefix matches is priced like the gpt-5 family (Codex's own default family). */
export const FALLBACK_PRICE: ModelPrice = { input: 1.25, cachedInput: 0.125, output: 10 };

export function priceOf(model: string | null | undefined): ModelPrice {
  return prices.priceIn(OPENAI_PRICES, FALLBACK_PRICE, model);
}

/** USD for a turn's tokens. Cache writes are billed as ordinary input (OpenAI charges no premium). */
export function estimateCostUsd(model: string | null | undefined, t: TurnTokens): number {
  return prices.costAt(priceOf(model), t);
}
