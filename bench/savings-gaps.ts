/**
 * What resuming saves when comments come minutes, hours or a day apart (issue 32). The savings
 * benchmark records every request of both arms; this re-accounts them as if each turn had come
 * a given gap after the previous one, against a prompt cache that forgets, under each lifetime a
 * turn can ask for. Pure: no clock, no I/O.
 *
 * The rule, on top of savings-accounting.ts's:
 * - A request's prefixes (whole blocks, as there) enter the cache when it is sent, with the
 *   lifetime its turn asked for; a prefix found again is read at 0.1× and its lifetime starts
 *   again (the API refreshes an entry on every hit); a prefix past its lifetime is gone.
 * - What a request sends that the cache does not hold, up to its last `cache_control`
 *   breakpoint, is a cache write, at 1.25× the input price for five minutes and 2× for an hour;
 *   the rest is input at 1×.
 * - Turns are `gap` apart; a turn's own requests follow each other REQUEST_SPACING_MS apart, so
 *   they always find each other's writes.
 * - Each arm has a cache of its own, as in the benchmark; other conversations on the same API
 *   key (which would keep the CLI's own tools and system prompt warm for everybody) are left
 *   out, so a long gap finds nothing at all.
 * - Under `auto` (core/cache-ttl.ts), a turn asks for an hour when the turn before it came
 *   within the hour, else five minutes; the first turn, five minutes.
 * Dollars: the input side only (output is the same in both arms), at the model's list price.
 */
import { createHash } from "node:crypto";
import { chooseCacheTtl, cacheTtlMs } from "../src/core/cache-ttl.js";
import type { CacheTtl, CacheTtlSetting } from "../src/core/settings.js";
import { cacheOrder, PRICE, BYTES_PER_TOKEN, type PromptBody } from "./savings-accounting.js";

/** Cache writes by lifetime, × the input price (Anthropic's prompt-caching prices). */
export const WRITE_PRICE: Record<CacheTtl, number> = { "5m": 1.25, "1h": 2 };
/** Claude Sonnet 4.5's input price, US dollars per million tokens. */
export const INPUT_USD_PER_MTOK = 3;
export const REQUEST_SPACING_MS = 5_000;

export const GAPS: ReadonlyArray<{ label: string; ms: number }> = [
  { label: "1 min", ms: 60_000 },
  { label: "10 min", ms: 10 * 60_000 },
  { label: "30 min", ms: 30 * 60_000 },
  { label: "2 h", ms: 2 * 3_600_000 },
  { label: "1 day", ms: 24 * 3_600_000 },
];
export const LIFETIMES: readonly CacheTtlSetting[] = ["5m", "1h", "auto"];

/** One turn's input bill, in billed-equivalent bytes (÷ BYTES_PER_TOKEN for tokens). */
export interface GapTurn {
  ttl: CacheTtl;
  readBytes: number;
  writeBytes: number;
  inputBytes: number;
  billedBytes: number;
}

/** Accounts one arm's turns (each a list of request bodies, in order) `gapMs` apart. */
export function accountAtGap(
  turns: ReadonlyArray<readonly PromptBody[]>,
  gapMs: number,
  setting: CacheTtlSetting,
): GapTurn[] {
  /** prefix hash → when it expires and the lifetime it was written with. */
  const cache = new Map<string, { expiresAt: number; ttl: CacheTtl }>();
  let previousTurnAt: number | null = null;
  return turns.map((requests, t) => {
    const turnAt = t * gapMs;
    const ttl = chooseCacheTtl(setting, {
      previousTurnAt: previousTurnAt === null ? null : new Date(previousTurnAt),
      now: new Date(turnAt),
    });
    const out: GapTurn = { ttl, readBytes: 0, writeBytes: 0, inputBytes: 0, billedBytes: 0 };
    requests.forEach((body, r) => {
      const now = turnAt + r * REQUEST_SPACING_MS;
      const blocks = cacheOrder(body);
      let h = createHash("sha256")
        .update(body.model ?? "")
        .digest("hex");
      const hashes = blocks.map(
        (b) => (h = createHash("sha256").update(h).update(b.key).digest("hex")),
      );
      let read = 0;
      while (read < blocks.length) {
        const e = cache.get(hashes[read]!);
        if (!e || e.expiresAt < now) break;
        read++;
      }
      const lastBreakpoint = blocks.findLastIndex((b) => b.breakpoint);
      blocks.forEach((b, i) => {
        if (i < read) out.readBytes += b.bytes;
        else if (i <= lastBreakpoint) out.writeBytes += b.bytes;
        else out.inputBytes += b.bytes;
        const e = cache.get(hashes[i]!);
        // A hit refreshes the entry for its own lifetime; a write (or rewrite) takes the turn's.
        const keep = i < read && e ? e.ttl : ttl;
        cache.set(hashes[i]!, { expiresAt: now + cacheTtlMs(keep), ttl: keep });
      });
    });
    out.billedBytes =
      out.readBytes * PRICE.cacheRead +
      out.writeBytes * WRITE_PRICE[ttl] +
      out.inputBytes * PRICE.input;
    previousTurnAt = turnAt;
    return out;
  });
}

export interface GapRow {
  gap: string;
  lifetime: CacheTtlSetting;
  /** Resumed ÷ cold billed input at these turns (1-based), and over the whole thread. */
  ratioAt: Record<number, number>;
  ratioThread: number;
  /** Input dollars per turn, mean over the thread, each arm. */
  usdPerTurn: { resume: number; cold: number };
}

/** The whole table: every gap under every lifetime. */
export function gapTable(
  arms: {
    resume: ReadonlyArray<readonly PromptBody[]>;
    cold: ReadonlyArray<readonly PromptBody[]>;
  },
  atTurns: readonly number[],
): GapRow[] {
  const rows: GapRow[] = [];
  for (const gap of GAPS)
    for (const lifetime of LIFETIMES) {
      const resume = accountAtGap(arms.resume, gap.ms, lifetime);
      const cold = accountAtGap(arms.cold, gap.ms, lifetime);
      const sum = (ts: GapTurn[]) => ts.reduce((n, t) => n + t.billedBytes, 0);
      const usd = (ts: GapTurn[]) =>
        ((sum(ts) / BYTES_PER_TOKEN / 1e6) * INPUT_USD_PER_MTOK) / Math.max(1, ts.length);
      rows.push({
        gap: gap.label,
        lifetime,
        ratioAt: Object.fromEntries(
          atTurns
            .filter((t) => t <= resume.length && t <= cold.length)
            .map((t) => [t, resume[t - 1]!.billedBytes / cold[t - 1]!.billedBytes]),
        ),
        ratioThread: sum(resume) / sum(cold),
        usdPerTurn: { resume: usd(resume), cold: usd(cold) },
      });
    }
  return rows;
}

/**
 * Which lifetime setting costs least over the gaps, each gap weighted alike, for the resume arm
 * (what Tether pays): the figure the default is chosen by.
 */
export function cheapestOverGaps(rows: readonly GapRow[]): {
  lifetime: CacheTtlSetting;
  meanUsdPerTurn: Record<string, number>;
} {
  const mean: Record<string, number> = {};
  for (const l of LIFETIMES) {
    const mine = rows.filter((r) => r.lifetime === l);
    mean[l] = mine.reduce((n, r) => n + r.usdPerTurn.resume, 0) / Math.max(1, mine.length);
  }
  const lifetime = [...LIFETIMES].sort((a, b) => mean[a]! - mean[b]!)[0]!;
  return { lifetime, meanUsdPerTurn: mean };
}

/** The table as markdown. */
export function renderGapTable(rows: readonly GapRow[], atTurns: readonly number[]): string {
  const head = [
    "gap",
    "lifetime",
    ...atTurns.map((t) => `turn ${t}`),
    "whole thread",
    "$ / turn, resumed",
    "$ / turn, cold",
  ];
  const lines = [
    `| ${head.join(" | ")} |`,
    `| ${head.map(() => "---").join(" | ")} |`,
    ...rows.map(
      (r) =>
        `| ${[
          r.gap,
          `\`${r.lifetime}\``,
          ...atTurns.map((t) => (r.ratioAt[t] === undefined ? "—" : r.ratioAt[t]!.toFixed(2))),
          r.ratioThread.toFixed(2),
          `$${r.usdPerTurn.resume.toFixed(4)}`,
          `$${r.usdPerTurn.cold.toFixed(4)}`,
        ].join(" | ")} |`,
    ),
  ];
  const best = cheapestOverGaps(rows);
  lines.push(
    "",
    `Resumed turn's input, mean over the five gaps: ${LIFETIMES.map((l) => `\`${l}\` $${best.meanUsdPerTurn[l]!.toFixed(4)}`).join(", ")}; cheapest: \`${best.lifetime}\`.`,
  );
  return lines.join("\n");
}
