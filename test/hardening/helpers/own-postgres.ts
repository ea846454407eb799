/**
 * A PostgreSQL server of the drill's own, for drills that stop and start it (the test run's
 * shared server must never be restarted: other test files use it). Same embedded package as
 * the app's; durability off for speed, as in the shared test server.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  freePort,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from "../../../src/db/embedded.js";
import { migrate } from "../../../src/db/migrate.js";
import { createPool, type Pool } from "../../../src/db/pool.js";

export interface OwnPostgres {
  /** postgres://… of the "postgres" database on this server. */
  url: string;
  port: number;
  /** A pool for the drill's own checks (it reconnects after a restart like the app's does). */
  pool: Pool;
  /** Stop the server (fast shutdown: every connection is cut). */
  stop(): Promise<void>;
  /** Start it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stop, then close the pool and remove the data directory. */
  close(): Promise<void>;
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-own-pg-"));
  const dataDir = path.join(dir, "data");
  const port = await freePort();
  const settings = { fsync: "off", synchronous_commit: "off", full_page_writes: "off" };
  let server: EmbeddedPostgres | undefined = await startEmbeddedPostgres({
    dataDir,
    port,
    settings,
  });
  await migrate(server.url);
  const pool = createPool(server.url, { max: 8 });
  return {
    url: server.url,
    port,
    pool,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      if (!server) server = await startEmbeddedPostgres({ dataDir, port, settings });
    },
    async close() {
      await pool.end().catch(() => {});
      await server?.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
