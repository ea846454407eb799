import path from "node:path";
import { fileURLToPath } from "node:url";
import { runner } from "node-pg-migrate";
import type { Logger } from "../log.js";

/** migrations/ at the repository root; the same from src/ (tests) and dist/src/ (production). */
export const MIGRATIONS_DIR = (() => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const parts = here.split(path.sep);
  const distAt = parts.lastIndexOf("dist");
  const root = distAt >= 0 ? parts.slice(0, distAt).join(path.sep) : path.resolve(here, "..", "..");
  return path.join(root || path.sep, "migrations");
})();

/**
 * Apply every pending migration. Safe to run from several processes at once: node-pg-migrate
 * takes an advisory lock, and a process that finds it taken waits for it (then sees nothing left
 * to apply) rather than failing its start, as eight runner pods starting together would.
 */
export async function migrate(
  databaseUrl: string,
  log?: Pick<Logger, "info" | "warn" | "error" | "debug">,
): Promise<string[]> {
  const applied = await runner({
    databaseUrl,
    dir: MIGRATIONS_DIR,
    direction: "up",
    migrationsTable: "pgmigrations",
    checkOrder: true,
    advisoryLockMode: "wait",
    verbose: false,
    logger: {
      info: (m: string) => log?.debug(m),
      warn: (m: string) => log?.warn(m),
      error: (m: string) => log?.error(m),
      debug: (m: string) => log?.debug(m),
    },
  });
  const names = applied.map((m) => m.name);
  if (names.length) log?.info({ migrations: names }, "migrations applied");
  return names;
}
