import path from "node:path";
import type { Env } from "../env.js";
import type { Logger } from "../log.js";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "./embedded.js";
import { migrate } from "./migrate.js";
import { createPool, type Pool } from "./pool.js";

export interface Database {
  url: string;
  pool: Pool;
  embedded?: EmbeddedPostgres;
  /** Close the pool, then stop the embedded server if we started one. */
  close(): Promise<void>;
}

/** DATABASE_URL when set, otherwise an embedded PostgreSQL under TETHER_DATA_DIR/postgres. Migrates. */
export async function openDatabase(
  env: Env,
  log: Logger,
  opts: { migrate?: boolean } = {},
): Promise<Database> {
  let url = env.DATABASE_URL;
  let embedded: EmbeddedPostgres | undefined;
  if (!url) {
    embedded = await startEmbeddedPostgres({
      dataDir: path.join(env.dataDir, "postgres"),
      port: env.TETHER_PG_PORT,
      log: log.child({ component: "postgres" }),
    });
    url = embedded.url;
  }
  try {
    if (opts.migrate !== false) await migrate(url, log);
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  const pool = createPool(url, { max: env.TETHER_RUNNER_CONCURRENCY + 8 });
  return {
    url,
    pool,
    embedded,
    async close() {
      await pool.end().catch(() => {});
      await embedded?.stop();
    },
  };
}
