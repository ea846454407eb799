/** Reviews the agents posted on pull requests (docs/how-a-turn-runs.md, "Reviews on lines"). */
import type { PoolClient } from "../../../db/pool.js";
import type { StatsWindow } from "../window.js";

export interface ReviewFigures {
  /** Reviews posted, one per pull request turn whose agent commented on lines. */
  posted: number;
  /** Reviews GitHub refused even with every comment moved into the body. */
  failed: number;
  /** Of the posted reviews' comments, those on the diff's lines (the rest went into the body). */
  lineComments: number;
}

/** Reviews of tasks queued in the window, read from tasks by the created_at index. */
export async function reviewFigures(c: PoolClient, w: StatsWindow): Promise<ReviewFigures> {
  const { rows } = await c.query<ReviewFigures>(
    `SELECT count(*) FILTER (WHERE review_result = 'posted')::int AS posted,
            count(*) FILTER (WHERE review_result = 'failed')::int AS failed,
            COALESCE(sum(review_line_comments) FILTER (WHERE review_result = 'posted'), 0)::int
              AS "lineComments"
       FROM tasks
      WHERE created_at >= $1 AND created_at <= $2 AND review_result IS NOT NULL`,
    [w.from, w.to],
  );
  return rows[0] ?? { posted: 0, failed: 0, lineComments: 0 };
}
