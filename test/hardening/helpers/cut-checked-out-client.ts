/**
 * Run as its own process by pool-connection-cut.test.ts: checks a client out of a Tether pool,
 * has the server end that connection while the client sits idle (as between two statements of
 * a transaction during a Postgres restart), and reports whether the process lived through it.
 */
import pg from "pg";
import { createPool } from "../../../src/db/pool.js";

const url = process.argv[2] ?? "";
const pool = createPool(url, { max: 2 });
const client = await pool.connect();
const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
await admin.end();
await new Promise((r) => setTimeout(r, 300));
const next = await client.query("SELECT 1").then(
  () => "answered",
  (err: Error) => `failed: ${err.message}`,
);
client.release(true);
const fresh = await pool.query("SELECT 1 AS ok");
await pool.end();
console.log(JSON.stringify({ survived: true, next, fresh: fresh.rows[0].ok }));
