/**
 * The spend limits, as pure functions: which limits a turn about to start has reached, the
 * calendar month the monthly ones count, and how amounts are written in the thread.
 *
 * The rules (README, "`.github/tether.yml`", the `spend:` keys):
 * - A limit is reached when what was spent is at or over it; a turn that would start then is
 *   not run. Spent means the recorded cost of finished turns: a turn still running elsewhere
 *   is not in the sum yet, so concurrent turns can each start under a limit and end over it.
 * - The conversation limit (per agent) counts every turn of that agent on the issue. `/fresh`
 *   starts the count again only when `spend.freshResetsConversation` is on; then a `/fresh`
 *   turn itself is never refused by it.
 * - The monthly limits count the turns asked for since the first of the month, 00:00 UTC.
 */

/** What a turn about to start is checked against. */
export interface LimitSettings {
  /** The agent's conversation limit, US dollars. */
  conversationLimitUsd?: number;
  repositoryMonthlyUsd?: number;
  installationMonthlyUsd?: number;
  freshResetsConversation: boolean;
}

/** What was spent, as far as a limit is set (a sum is only read for a limit that exists). */
export interface SpentSoFar {
  /** The conversation's counted spend (since its reset, when `/fresh` resets it). */
  conversationUsd: number;
  repositoryMonthUsd?: number;
  installationMonthUsd?: number;
}

export const LIMIT_KINDS = ["conversation", "repository_month", "installation_month"] as const;
export type LimitKind = (typeof LIMIT_KINDS)[number];

export interface ReachedLimit {
  kind: LimitKind;
  spentUsd: number;
  limitUsd: number;
}

/** The limits a turn would start at or over, most specific first; empty: it may run. */
export function reachedLimits(
  limits: LimitSettings,
  spent: SpentSoFar,
  turn: { forceFresh: boolean },
): ReachedLimit[] {
  const out: ReachedLimit[] = [];
  // A limit is reached when it is set, its sum was read, and the sum is at or over it. A `/fresh`
  // turn that starts the conversation's count again is not held by the conversation limit.
  const check = (kind: LimitKind, spentUsd: number | undefined, limitUsd: number | undefined) => {
    if (limitUsd !== undefined && spentUsd !== undefined && spentUsd >= limitUsd)
      out.push({ kind, spentUsd, limitUsd });
  };
  const conversationCounts = !(limits.freshResetsConversation && turn.forceFresh);
  check(
    "conversation",
    conversationCounts ? spent.conversationUsd : undefined,
    limits.conversationLimitUsd,
  );
  check("repository_month", spent.repositoryMonthUsd, limits.repositoryMonthlyUsd);
  check("installation_month", spent.installationMonthUsd, limits.installationMonthlyUsd);
  return out;
}

/** The first moment of `now`'s calendar month, UTC. */
export function monthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/** The first moment of the next calendar month, UTC: when the monthly counts start again. */
export function nextMonthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

/** "July 2025": the month a monthly limit counts, in words. */
export function monthName(now: Date): string {
  return now.toLocaleString("en-GB", { month: "long", year: "numeric", timeZone: "UTC" });
}

/** "1 August 2025". */
export function dayName(d: Date): string {
  return d.toLocaleString("en-GB", {
    day: "numeric",
    month: "long",
    year: "numeric",
    timeZone: "UTC",
  });
}

/**
 * An amount spent: cents are too coarse for one turn (a resumed turn costs about a cent), so
 * four decimals under $1 and two from there.
 */
export function formatSpent(usd: number): string {
  const v = Math.max(0, usd);
  return v < 1 ? `$${v.toFixed(4)}` : `$${v.toFixed(2)}`;
}

/** A limit as it was written: `$0.10`, `$0.115`, `$20.00`. */
export function formatLimit(usd: number): string {
  const cents = usd.toFixed(2);
  return Number(cents) === usd ? `$${cents}` : `$${String(usd)}`;
}
