import type { Env } from "./env.js";
import type { Logger } from "./log.js";
import type { Pool } from "./db/pool.js";

/** What the web side needs from the process: its edges, passed in so tests can supply their own. */
export interface AppDeps {
  env: Env;
  log: Logger;
  pool: Pool;
  /** Wall clock, injectable for tests. */
  now?: () => Date;
}
