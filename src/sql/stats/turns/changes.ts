/** What became of the agents' changes: publishes by result and reason. */
import type { PoolClient } from "../../../db/pool.js";
import { UNKNOWN_REASON, type ChangesFigures } from "../figures.js";
import type { StatsWindow } from "../window.js";

/** Publishes by result and reason, of turns that finished in the window (tasks_publish index). */
export interface ChangeRow {
  result: string;
  reason: string | null;
  turns: number;
  commits: number;
  pulls: number;
}

export async function changeRows(c: PoolClient, w: StatsWindow): Promise<ChangeRow[]> {
  const { rows } = await c.query<ChangeRow>(
    `SELECT publish_result AS result, publish_reason AS reason, count(*)::int AS turns,
            COALESCE(sum(commits_pushed), 0)::int AS commits, count(pull_opened)::int AS pulls
       FROM tasks
      WHERE publish_result IS NOT NULL AND finished_at >= $1 AND finished_at <= $2
      GROUP BY 1, 2`,
    [w.from, w.to],
  );
  return rows;
}

export function changesFigures(rows: readonly ChangeRow[]): ChangesFigures {
  const out: ChangesFigures = {
    published: 0,
    commitsPushed: 0,
    pullRequestsOpened: 0,
    patches: 0,
    unchanged: 0,
    refused: {},
    failed: {},
  };
  for (const r of rows) {
    out.commitsPushed += r.commits;
    out.pullRequestsOpened += r.pulls;
    if (r.result === "published") out.published += r.turns;
    else if (r.result === "patch") out.patches += r.turns;
    else if (r.result === "unchanged") out.unchanged += r.turns;
    else if (r.result === "refused" || r.result === "failed") {
      const bag = out[r.result];
      const why = r.reason ?? UNKNOWN_REASON;
      bag[why] = (bag[why] ?? 0) + r.turns;
    }
  }
  return out;
}
