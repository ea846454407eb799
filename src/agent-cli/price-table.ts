/**
 * One lookup for the per-token price tables of CLIs that report tokens but no cost (Codex,
 * Gemini CLI): each provider's table and fallback is in src/providers/, priced here.
 */

export interface ModelPrice {
  /** USD per million uncached input tokens. */
  input: number;
  /** USD per million cached input tokens. */
  cachedInput: number;
  /** USD per million output tokens (reasoning or thinking included). */
  output: number;
}

/** A provider's table: model-name prefixes, longest matching prefix wins. */
export type PriceTable = ReadonlyArray<[prefix: string, price: ModelPrice]>;

export interface TurnTokens {
  inputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
  outputTokens: number;
}

export function priceIn(
  table: PriceTable,
  fallback: ModelPrice,
  model: string | null | undefined,
): ModelPrice {
  let best: [string, ModelPrice] | undefined;
  for (const row of table) {
    if (model?.startsWith(row[0]) && (!best || row[0].length > best[0].length)) best = row;
  }
  return best?.[1] ?? fallback;
}

/** USD for a turn's tokens, to the micro-dollar. Cache writes are billed as ordinary input. */
export function costAt(p: ModelPrice, t: TurnTokens): number {
  const usd =
    ((t.inputTokens + t.cacheCreationTokens) * p.input +
      t.cacheReadTokens * p.cachedInput +
      t.outputTokens * p.output) /
    1_000_000;
  return Math.round(usd * 1e6) / 1e6;
}
