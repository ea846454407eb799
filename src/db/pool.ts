import pg from "pg";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

// bigint columns (ids, token counts) fit in a JS number for any value Tether will see.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number.parseInt(v, 10));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number.parseFloat(v));

export function createPool(
  connectionString: string,
  opts: { max?: number; application?: string; statementTimeoutMs?: number } = {},
): Pool {
  const pool = new pg.Pool({
    connectionString,
    max: opts.max ?? 10,
    application_name: opts.application ?? "tether",
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    ...(opts.statementTimeoutMs ? { statement_timeout: opts.statementTimeoutMs } : {}),
  });
  // An idle client that loses its server (Postgres restart) emits 'error' on the pool; without a
  // listener that would crash the process. The next query simply gets a fresh connection.
  pool.on("error", () => {});
  // A checked-out client has no pool listener, and node-postgres emits 'error' on it when the
  // server cuts the connection between two statements (a transaction rolling back just as the
  // server goes away), which crashed the process during a Postgres restart. The failure still
  // reaches the code through its next query, and a client that is no longer queryable is
  // dropped when released.
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}
