/** How the window's turns got their session: moved across runtimes, restored, compacted. */
import type { PoolClient } from "../../../db/pool.js";
import type { SessionMoves } from "../figures.js";
import type { StatsWindow } from "../window.js";

export const NO_MOVES: SessionMoves = {
  resumedAcross: 0,
  restoredFromStore: 0,
  restoredFromCache: 0,
  storeRestoreMsP50: null,
  compacted: 0,
};

export async function sessionMoves(c: PoolClient, w: StatsWindow): Promise<SessionMoves> {
  const { rows } = await c.query(
    `SELECT count(*) FILTER (WHERE resumed_across)::int AS across,
            count(*) FILTER (WHERE session_restore = 'store')::int AS store,
            count(*) FILTER (WHERE session_restore = 'cache')::int AS cache,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY restore_ms)
              FILTER (WHERE session_restore = 'store') AS p50,
            count(*) FILTER (WHERE compacted)::int AS compacted
       FROM tasks WHERE created_at >= $1 AND created_at < $2`,
    [w.from, w.to],
  );
  const r = rows[0] as Record<string, unknown>;
  return {
    resumedAcross: r.across as number,
    restoredFromStore: r.store as number,
    restoredFromCache: r.cache as number,
    storeRestoreMsP50: r.p50 === null ? null : Number(r.p50),
    compacted: r.compacted as number,
  };
}
