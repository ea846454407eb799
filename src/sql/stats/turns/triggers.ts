/** Turns by what started them (README "Talking to Tether"): comment, review, label, assignment, CI. */
import type { PoolClient } from "../../../db/pool.js";
import { TRIGGERS } from "../../../core/task.js";
import type { StatsWindow } from "../window.js";

export interface TriggerRow {
  trigger: string;
  turns: number;
}

/**
 * Finished turns of tasks queued in the window, by trigger: read from tasks by the created_at
 * index (one window of rows), leaving the hourly roll-up as it is. A task a spend limit kept
 * from running is no turn.
 */
export async function triggerRows(c: PoolClient, w: StatsWindow): Promise<TriggerRow[]> {
  const { rows } = await c.query<TriggerRow>(
    `SELECT trigger, count(*)::int AS turns
       FROM tasks
      WHERE created_at >= $1 AND created_at <= $2 AND finished_at IS NOT NULL
        AND outcome IS DISTINCT FROM 'limit_refused'
      GROUP BY 1`,
    [w.from, w.to],
  );
  return rows;
}

/** Every trigger with its count, zeros included. */
export function triggerFigures(rows: readonly TriggerRow[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(TRIGGERS.map((t) => [t, 0]));
  for (const r of rows) out[r.trigger] = (out[r.trigger] ?? 0) + r.turns;
  return out;
}
