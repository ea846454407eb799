/** CI loops (docs/how-a-turn-runs.md "Triggers beyond a mention"): the runs of automatic CI turns, by how they ended. */
import type { PoolClient } from "../../../db/pool.js";
import type { StatsWindow } from "../window.js";

/** How a loop ends: `open` while it runs; then `green`, `stopped` (ci.maxAttempts) or `limit`. */
export const CI_LOOP_STATES = ["open", "green", "stopped", "limit"] as const;

export interface CiLoopRow {
  state: string;
  loops: number;
  attempts: number;
}

/** Loops started in the window, by state, with the automatic turns they queued. */
export async function ciLoopRows(c: PoolClient, w: StatsWindow): Promise<CiLoopRow[]> {
  const { rows } = await c.query<CiLoopRow>(
    `SELECT state, count(*)::int AS loops, coalesce(sum(attempts), 0)::int AS attempts
       FROM ci_loops
      WHERE started_at >= $1 AND started_at <= $2
      GROUP BY 1`,
    [w.from, w.to],
  );
  return rows;
}

export interface CiLoopFigures {
  /** Loops started in the window, by how they stand: every state present, zeros included. */
  loops: Record<string, number>;
  /** Automatic CI turns those loops queued. */
  turns: number;
}

export function ciLoopFigures(rows: readonly CiLoopRow[]): CiLoopFigures {
  const loops: Record<string, number> = Object.fromEntries(CI_LOOP_STATES.map((s) => [s, 0]));
  let turns = 0;
  for (const r of rows) {
    loops[r.state] = (loops[r.state] ?? 0) + r.loops;
    turns += r.attempts;
  }
  return { loops, turns };
}
