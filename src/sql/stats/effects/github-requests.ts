/**
 * GitHub requests per turn (#34, "a request budget per turn"), by kind of turn: a first turn,
 * a follow-up, and a turn that published its changes (whether first or follow-up). From the
 * count each task keeps (tasks.github_requests, src/github/request-count.ts).
 */
import type { PoolClient } from "../../../db/pool.js";
import type { StatsWindow } from "../window.js";

export const REQUEST_TURN_KINDS = ["first", "followUp", "publishing"] as const;
export type RequestTurnKind = (typeof REQUEST_TURN_KINDS)[number];

/** One kind of turn's GitHub requests. */
export interface TurnRequestFigures {
  /** Turns with a count (turns recorded before the count have none). */
  turns: number;
  /** Median requests per turn; null without a turn. */
  median: number | null;
  /** Mean requests per turn; null without a turn. */
  mean: number | null;
  /**
   * Median conditional requests per turn answered 304 (not counted against the limit, nor in
   * `median`); null without a turn that recorded them.
   */
  notModifiedMedian: number | null;
}

export interface GithubRequestRow {
  kind: RequestTurnKind;
  turns: number;
  median: number | null;
  mean: number | null;
  not_modified_median: number | null;
}

/** Finished tasks queued in the window with a count, by kind (the created_at index). */
export async function githubRequestRows(
  c: PoolClient,
  w: StatsWindow,
): Promise<GithubRequestRow[]> {
  const { rows } = await c.query<GithubRequestRow>(
    `SELECT CASE WHEN publish_result = 'published' THEN 'publishing'
                 WHEN is_follow_up THEN 'followUp' ELSE 'first' END AS kind,
            count(*)::int AS turns,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY github_requests)::float8 AS median,
            avg(github_requests)::float8 AS mean,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY github_requests_not_modified)::float8
              AS not_modified_median
       FROM tasks
      WHERE created_at >= $1 AND created_at <= $2 AND finished_at IS NOT NULL
        AND github_requests IS NOT NULL
      GROUP BY 1`,
    [w.from, w.to],
  );
  return rows;
}

/** Every kind, a kind without turns as zeros and nulls; the mean to one decimal. */
export function githubRequestFigures(
  rows: readonly GithubRequestRow[],
): Record<RequestTurnKind, TurnRequestFigures> {
  const out = Object.fromEntries(
    REQUEST_TURN_KINDS.map((k) => [
      k,
      { turns: 0, median: null, mean: null, notModifiedMedian: null },
    ]),
  ) as Record<RequestTurnKind, TurnRequestFigures>;
  for (const r of rows)
    out[r.kind] = {
      turns: r.turns,
      median: r.median,
      mean: r.mean === null ? null : Math.round(r.mean * 10) / 10,
      notModifiedMedian: r.not_modified_median,
    };
  return out;
}
