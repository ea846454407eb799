/** The one REPEATABLE READ READ ONLY transaction every stats read runs in, and its timeout. */
import type { Pool, PoolClient } from "../../db/pool.js";

export const DEFAULT_STATS_TIMEOUT_MS = 5_000;

export class StatsTimeoutError extends Error {
  constructor(
    readonly timeoutMs: number,
    cause: unknown,
  ) {
    super(
      `The dashboard's statistics query over the tasks table ran longer than ${timeoutMs} ms and was cancelled; ` +
        "check the database's load, and that the roll-up tables of migration 1763800000600_turn-stats-rollups exist",
      { cause },
    );
    this.name = "StatsTimeoutError";
  }
}

export async function inSnapshot<T>(
  pool: Pool,
  timeoutMs: number,
  fn: (c: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    // SET LOCAL takes no bind parameters; the value is an integer we produced.
    await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    if ((err as { code?: string }).code === "57014") throw new StatsTimeoutError(timeoutMs, err);
    throw err;
  } finally {
    client.release(broken);
  }
}
