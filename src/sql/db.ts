/**
 * What every query of src/sql/ runs on: `Queryable` (a pool, a client, a client inside a
 * transaction) and `inTransaction`, the one way a write of several statements is made atomic.
 */
import type pg from "pg";
import type { Pool, PoolClient } from "../db/pool.js";

/** Anything that runs a query: a pool, a client, a client inside a transaction. */
export type Queryable = Pick<pg.ClientBase, "query">;

/**
 * Run `fn` in a transaction on a connection of its own: COMMIT when it returns, ROLLBACK when it
 * throws (and the error goes on).
 */
export async function inTransaction<T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    // A connection that cannot even roll back is gone: destroy it rather than pool it.
    await client.query("ROLLBACK").catch((e: Error) => (broken = e));
    throw err;
  } finally {
    client.release(broken);
  }
}
