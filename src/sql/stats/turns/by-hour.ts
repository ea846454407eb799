/** The window's turns by chart bucket, reason, outcome and CLI, from the hourly roll-up. */
import type { PoolClient } from "../../../db/pool.js";
import { BUCKET_MS, type StatsWindow } from "../window.js";

/** Turn sums for one bucket and one (follow-up, resumed, reason, outcome) combination. */
export interface HourRow {
  bucket: number;
  /** The agent CLI; absent counts as the default CLI. */
  cli?: string;
  follow_up: boolean;
  resumed: boolean;
  reason: string;
  outcome: string;
  turns: number;
  with_usage: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  with_cost: number;
  cost_usd: number;
  with_duration: number;
  duration_ms: number;
}

/**
 * The window's turns by chart bucket and by every dimension the page breaks them down by, from
 * the hourly roll-up: at most (hours in the window) × (a few dozen combinations) rows.
 */
export function hourRowsQuery(w: StatsWindow): { text: string; values: unknown[] } {
  return {
    text: `SELECT floor((extract(epoch FROM hour) - $3) / $4)::int AS bucket,
                  cli, follow_up, resumed, reason, outcome,
                  sum(turns) AS turns, sum(with_usage) AS with_usage,
                  sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
                  sum(cache_read_tokens) AS cache_read_tokens,
                  sum(cache_creation_tokens) AS cache_creation_tokens,
                  sum(with_cost) AS with_cost, sum(cost_usd) AS cost_usd,
                  sum(with_duration) AS with_duration, sum(duration_ms) AS duration_ms
             FROM turn_stats_hourly
            WHERE hour >= $1 AND hour <= $2
            GROUP BY 1, cli, follow_up, resumed, reason, outcome
           HAVING sum(turns) <> 0`,
    values: [w.from, w.to, w.from.getTime() / 1000, BUCKET_MS[w.bucket] / 1000],
  };
}

export async function hourRows(c: PoolClient, w: StatsWindow): Promise<HourRow[]> {
  return (await c.query<HourRow>(hourRowsQuery(w))).rows;
}
