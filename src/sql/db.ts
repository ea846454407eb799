/**
 * What every query of src/sql/ runs on: `Queryable` (a pool, a client, a client inside a
 * transaction) and `inTransaction`, the one way a write of several statements is made atomic.
 */
import type pg from "pg";
import type { Pool, PoolClient } from "../db/pool.js";

/** Anything that runs a query: a pool, a client, a client inside a transaction. */
export type Queryable = Pick<pg.ClientBase, "query">;

/**
 * Run `fn` in a transaction: COMMIT when it returns, ROLLBACK when it throws (and the error goes
 * on). Given a pool it takes a connection of its own and gives it back after; given a client
 * (one holding a session lock, say) it runs there and leaves the client to its holder.
 */
export async function inTransaction<T>(
  db: Pool | PoolClient,
  fn: (tx: PoolClient) => Promise<T>,
): Promise<T> {
  const own = !("release" in db);
  const client = "release" in db ? db : await db.connect();
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
    if (own) client.release(broken);
  }
}
