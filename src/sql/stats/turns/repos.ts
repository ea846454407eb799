/** The per-repository table: turns, spend and refusals per (repository, agent). */
import type { PoolClient } from "../../../db/pool.js";
import type { StatsWindow } from "../window.js";

/** Turn sums for one (repository, agent). */
export interface RepoAggRow {
  repo: string;
  agent: string;
  turns: number;
  follow_ups: number;
  resumed: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  cost_usd: number;
}

/**
 * Per (repository, agent): whole UTC days from the daily roll-up for the 7 and 30 day ranges;
 * the 24 h range starts mid-day, so it reads that day of tasks directly.
 */
export function repoRowsQuery(w: StatsWindow): { text: string; values: unknown[] } {
  if (w.bucket === "day") {
    return {
      text: `SELECT repo, agent, sum(turns) AS turns, sum(follow_ups) AS follow_ups,
                    sum(resumed) AS resumed, sum(input_tokens) AS input_tokens,
                    sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
                    sum(cache_creation_tokens) AS cache_creation_tokens, sum(cost_usd) AS cost_usd
               FROM turn_stats_daily_repo
              WHERE day >= $1 AND day <= $2
              GROUP BY repo, agent
             HAVING sum(turns) <> 0`,
      values: [w.from, w.to],
    };
  }
  return {
    text: `SELECT repo, agent, count(*) AS turns,
                  count(*) FILTER (WHERE coalesce(is_follow_up, false) OR resumed) AS follow_ups,
                  count(*) FILTER (WHERE resumed) AS resumed,
                  coalesce(sum(input_tokens), 0) AS input_tokens,
                  coalesce(sum(output_tokens), 0) AS output_tokens,
                  coalesce(sum(cache_read_tokens), 0) AS cache_read_tokens,
                  coalesce(sum(cache_creation_tokens), 0) AS cache_creation_tokens,
                  coalesce(sum(cost_usd), 0) AS cost_usd
             FROM (SELECT repo, agent, is_follow_up, input_tokens, output_tokens,
                          cache_read_tokens, cache_creation_tokens, cost_usd,
                          resume_decision = 'resume'
                            AND resume_reason IS NOT DISTINCT FROM 'resumed' AS resumed
                     FROM tasks
                    WHERE resume_decision IS NOT NULL
                      AND created_at >= $1 AND created_at <= $2) t
            GROUP BY repo, agent`,
    values: [w.from, w.to],
  };
}

/** Tasks a spend limit refused, per (repository, agent), in the window (by their created_at). */
export interface RefusedRow {
  repo: string;
  agent: string;
  refused: number;
}

/** Refusals are not turns, so not in the roll-ups: read from tasks by the limit_refused index. */
export function refusedRowsQuery(w: StatsWindow): { text: string; values: unknown[] } {
  return {
    text: `SELECT repo, agent, count(*) AS refused FROM tasks
            WHERE outcome = 'limit_refused' AND created_at >= $1 AND created_at <= $2
            GROUP BY repo, agent`,
    values: [w.from, w.to],
  };
}

export async function refusedRows(c: PoolClient, w: StatsWindow): Promise<RefusedRow[]> {
  return (await c.query<RefusedRow>(refusedRowsQuery(w))).rows;
}

export async function repoRows(c: PoolClient, w: StatsWindow): Promise<RepoAggRow[]> {
  return (await c.query<RepoAggRow>(repoRowsQuery(w))).rows;
}
