import type { Env } from "./env.js";
import type { Logger } from "./log.js";
import type { Pool } from "./db/pool.js";
import type { DescribeStatus } from "./intake/status.js";
import type { SandboxStatus } from "./sandbox/sandbox.js";

/** What the web side needs from the process: its edges, passed in so tests can supply their own. */
export interface AppDeps {
  env: Env;
  log: Logger;
  pool: Pool;
  /**
   * The token /dashboard and /api/stats ask for: TETHER_DASHBOARD_TOKEN, or the one main.ts
   * made in the data directory. Unset here, the routes use TETHER_DASHBOARD_TOKEN, and without
   * that they refuse every request.
   */
  dashboardToken?: string;
  /** Wall clock, injectable for tests. */
  now?: () => Date;
  /**
   * Renders the /status reply. Default (intake): running and queued tasks and the last session
   * per agent; the runner plugs in what the next turn would do (resume or fresh, and why).
   */
  describeStatus?: DescribeStatus;
  /** Present when this process runs a runner: whether its loop is heartbeating. */
  runnerAlive?: () => boolean;
  /** Present when this process runs a runner: whether its agent sandbox works (or is off). */
  runnerSandbox?: () => SandboxStatus | undefined;
}
