/** The runtimes table: where sessions live, and which runners are alive there. */
import type { Queryable } from "./db.js";

export interface RuntimeInfo {
  id: string;
  hostname: string;
  homeDir: string;
  cliPath: string;
  cliVersion: string | null;
  canResume: boolean | null;
  concurrency: number;
  /** How its runner runs agents (sandboxLabel in src/sandbox/sandbox.ts); null if unknown. */
  sandbox?: string | null;
}

export async function registerRuntime(db: Queryable, r: RuntimeInfo): Promise<void> {
  await db.query(
    `INSERT INTO runtimes (id, hostname, home_dir, cli_path, cli_version, can_resume, concurrency, sandbox)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (id) DO UPDATE SET hostname = EXCLUDED.hostname, home_dir = EXCLUDED.home_dir,
       cli_path = EXCLUDED.cli_path, cli_version = EXCLUDED.cli_version,
       can_resume = EXCLUDED.can_resume, concurrency = EXCLUDED.concurrency, sandbox = EXCLUDED.sandbox,
       started_at = now(), heartbeat_at = now(), stopped_at = NULL`,
    [
      r.id,
      r.hostname,
      r.homeDir,
      r.cliPath,
      r.cliVersion,
      r.canResume,
      r.concurrency,
      r.sandbox ?? null,
    ],
  );
}

export async function heartbeatRuntime(db: Queryable, id: string, running: number): Promise<void> {
  await db.query(
    `UPDATE runtimes SET heartbeat_at = now(), running = $2, stopped_at = NULL WHERE id = $1`,
    [id, running],
  );
}

/** A clean stop: other runtimes need not wait for this one to take its keys' tasks. */
export async function markRuntimeStopped(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE runtimes SET stopped_at = now(), running = 0 WHERE id = $1`, [id]);
}
