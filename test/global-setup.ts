import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import {
  clearStaleServer,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from "../src/db/embedded.js";
import { migrate } from "../src/db/migrate.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of the run's embedded server (database "postgres"). */
    pgAdminUrl: string;
    /** Name of the migrated template every test database is copied from. */
    pgTemplate: string;
  }
}

const PREFIX = "tether-test-pg-";
export const TEMPLATE = "tether_template";

/**
 * One real PostgreSQL for the whole run, in a temp dir of its own (so parallel runs never
 * share one), with a migrated template database; each test file clones the template. The
 * integration and e2e tiers both name this file: when one run holds both, they share the one
 * server (the first to start it starts it, the last to finish stops it). Only the e2e tier
 * builds `dist/`.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  shared.users += 1;
  shared.server ??= startServer();
  let server: EmbeddedPostgres;
  try {
    server = (await shared.server).server;
  } catch (err) {
    shared.users -= 1;
    throw err;
  }
  // End-to-end tests start the built app as a real process: the build as `npm run build` does it
  // (tsc, then the dashboard's browser script copied beside the compiled page).
  if (project.name === "e2e" && process.env.TETHER_TEST_SKIP_BUILD !== "1") {
    execFileSync("npm", ["run", "--silent", "build"], { stdio: "inherit" });
  }
  project.provide("pgAdminUrl", server.url);
  project.provide("pgTemplate", TEMPLATE);
  return async () => {
    shared.users -= 1;
    if (shared.users > 0 || shared.server === undefined) return;
    const { dir } = await shared.server;
    shared.server = undefined;
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
}

// On globalThis, not in this module: vitest loads a global setup file once per project that names it.
type Shared = { users: number; server?: Promise<{ server: EmbeddedPostgres; dir: string }> };
const shared: Shared = ((globalThis as { tetherTestPg?: Shared }).tetherTestPg ??= { users: 0 });

async function startServer(): Promise<{ server: EmbeddedPostgres; dir: string }> {
  await sweepOrphans();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${PREFIX}${process.pid}-`));
  let server: EmbeddedPostgres;
  try {
    server = await startEmbeddedPostgres({
      dataDir: path.join(dir, "data"),
      settings: { fsync: "off", synchronous_commit: "off", full_page_writes: "off" },
    });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw oneLine(err);
  }
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${TEMPLATE}`);
  await admin.end();
  await migrate(server.url.replace(/\/postgres$/, `/${TEMPLATE}`));
  return { server, dir };
}

/**
 * No test can run without the database: say why in one line (its messages say what to do), which
 * .ci/run repeats as its summary, rather than a stack through vitest's internals.
 */
function oneLine(err: unknown): Error {
  const e = err instanceof Error ? err : new Error(String(err));
  const line =
    `The test suite's embedded PostgreSQL did not start (the suite always runs its own; ` +
    `DATABASE_URL does not apply). ${e.name}: ${e.message}`;
  const out = new Error(line);
  out.name = "TestDatabaseError";
  out.stack = `${out.name}: ${line}`;
  return out;
}

/** A run killed before teardown leaves its server behind; stop those whose runner is gone. */
async function sweepOrphans(): Promise<void> {
  for (const name of fs.readdirSync(os.tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const ownerPid = Number.parseInt(name.slice(PREFIX.length), 10);
    if (Number.isInteger(ownerPid) && isAlive(ownerPid)) continue;
    const dir = path.join(os.tmpdir(), name);
    try {
      await clearStaleServer(path.join(dir, "data"));
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      /* another run's, or still going away: leave it */
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
