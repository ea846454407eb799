/** The range a page asks for and the window it covers: whole UTC hours or days, in buckets. */
import { z } from "zod";

export const StatsRange = z.enum(["24h", "7d", "30d"]);
export type StatsRange = z.infer<typeof StatsRange>;
export type StatsBucket = "hour" | "day";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const RANGE_MS: Record<StatsRange, number> = {
  "24h": DAY_MS,
  "7d": 7 * DAY_MS,
  "30d": 30 * DAY_MS,
};
export const BUCKET_MS: Record<StatsBucket, number> = { hour: HOUR_MS, day: DAY_MS };
/** The chart's grain for each range: 24 hourly points, 7 or 30 daily (UTC) points. */
export const BUCKET: Record<StatsRange, StatsBucket> = {
  "24h": "hour",
  "7d": "day",
  "30d": "day",
};

export interface StatsWindow {
  range: StatsRange;
  bucket: StatsBucket;
  /** Start of the first bucket (inclusive). */
  from: Date;
  /** The moment the figures were taken (inclusive end). */
  to: Date;
  /** Start of each bucket, oldest first; the last one is the current, partial, bucket. */
  buckets: Date[];
}

/**
 * The window a range covers: whole UTC hours or days, the current partial one included, so the
 * chart's points line up with the clock (24 h = the current hour and the 23 before it).
 */
export function statsWindow(range: StatsRange, now: Date): StatsWindow {
  const b = BUCKET[range];
  const size = BUCKET_MS[b];
  const count = Math.max(1, Math.round(RANGE_MS[range] / size));
  const current = Math.floor(now.getTime() / size) * size;
  const buckets = Array.from(
    { length: count },
    (_, i) => new Date(current - (count - 1 - i) * size),
  );
  return { range, bucket: b, from: buckets[0] ?? new Date(current), to: now, buckets };
}
