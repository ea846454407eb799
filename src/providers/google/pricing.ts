/**
 * What a Gemini CLI turn cost, estimated: the CLI reports tokens only
 * (docs/gemini-cli-facts.md), so Tether prices them from the model with this table: Google's
 * published list prices for the Gemini API (paid tier) per million tokens as known when it was
 * written, for prompts up to 200k tokens (the 2.5 Pro and 3 Pro prices double above that, which
 * this estimate ignores). A model missing here is priced as its family, else as Pro.
 */

import * as prices from "../../agent-cli/price-table.js";
import type { ModelPrice, PriceTable, TurnTokens } from "../../agent-cli/price-table.js";

/** Longest matching prefix wins. */
export const GEMINI_PRICES: PriceTable = [
  ["gemini-3-pro", { input: 2, cachedInput: 0.2, output: 12 }],
  ["gemini-3-flash", { input: 0.5, cachedInput: 0.05, output: 3 }],
  ["gemini-2.5-pro", { input: 1.25, cachedInput: 0.125, output: 10 }],
  ["gemini-2.5-flash-lite", { input: 0.1, cachedInput: 0.01, output: 0.4 }],
  ["gemini-2.5-flash", { input: 0.3, cachedInput: 0.03, output: 2.5 }],
  ["gemini-2.0-flash-lite", { input: 0.075, cachedInput: 0.075, output: 0.3 }],
  ["gemini-2.0-flash", { input: 0.1, cachedInput: 0.025, output: 0.4 }],
];

/** The context window of the Gemini models the CLI offers (2.5 and 3: one million tokens). */
export const GEMINI_CONTEXT_WINDOW = 1_048_576;

/** A model no prefix matches is priced as Pro: an estimate errs on the high side. */
export const FALLBACK_PRICE: ModelPrice = { input: 2, cachedInput: 0.2, output: 12 };

export function priceOf(model: string | null | undefined): ModelPrice {
  return prices.priceIn(GEMINI_PRICES, FALLBACK_PRICE, model);
}

/** USD for a turn's tokens (cache writes are ordinary input: implicit caching costs no more). */
export function estimateCostUsd(model: string | null | undefined, t: TurnTokens): number {
  return prices.costAt(priceOf(model), t);
}
