/**
 * How long the model API keeps a turn's prompt in its cache: Anthropic's two lifetimes, five
 * minutes (cache writes billed at 1.25× the input price) or an hour (writes at 2×; reads are
 * 0.1× either way, and each read starts the lifetime again). A resumed turn pays off in tokens
 * only when the cache still holds the session's prefix, so the lifetime a turn writes with
 * decides what the NEXT turn of the conversation pays. docs/benchmarks.md ("Savings by gap")
 * has the figures this choice was made from.
 */
import type { CacheTtl, CacheTtlSetting } from "./settings.js";

/** A conversation whose last turn ended within this is taken to be followed soon. */
export const ACTIVE_WITHIN_MS = 60 * 60_000;

export interface CacheTtlFacts {
  /** When the key's previous turn last used its session; null on a first turn. */
  previousTurnAt: Date | null;
  now: Date;
  /** An automatic turn that a person is not waiting to read (a CI loop's): one follows soon. */
  automatic?: boolean;
}

/**
 * The lifetime one turn asks for. `5m` and `1h` are taken as set. `auto`: an hour when the
 * turn is likely to be followed within it (a CI loop's turn, or a conversation whose previous
 * turn came within the hour), else five minutes (a first turn, or one on a quiet issue), so a
 * thread that goes quiet stops paying the hour's dearer writes after one turn.
 */
export function chooseCacheTtl(setting: CacheTtlSetting | undefined, f: CacheTtlFacts): CacheTtl {
  if (setting === "5m" || setting === "1h") return setting;
  if (f.automatic) return "1h";
  if (f.previousTurnAt === null) return "5m";
  return f.now.getTime() - f.previousTurnAt.getTime() <= ACTIVE_WITHIN_MS ? "1h" : "5m";
}

/** How long a lifetime lasts, in milliseconds. */
export function cacheTtlMs(ttl: CacheTtl): number {
  return ttl === "1h" ? 60 * 60_000 : 5 * 60_000;
}
