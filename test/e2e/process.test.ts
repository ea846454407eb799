import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import type { LockOwner } from "../../src/db/data-dir-lock.js";
import { freePort } from "../../src/db/embedded.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-proc-"));
const lockFile = path.join(dataDir, "postgres.lock");
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  postgresPids().forEach((pid) => process.kill(pid, "SIGKILL"));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/**
 * PIDs of postgres servers whose data directory is ours: named on their command line, or (run as
 * root, given `-D /proc/self/cwd`) their working directory.
 */
function postgresPids(): number[] {
  const pids: number[] = [];
  const real = fs.realpathSync(dataDir);
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (!cmd.includes("postgres")) continue;
      const cwd = fs.readlinkSync(`/proc/${entry}/cwd`);
      if (cmd.includes(dataDir) || cwd === real || cwd.startsWith(`${real}/`))
        pids.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  return pids;
}

type Role = "all" | "runner";

function spawnApp(port: number, role: Role = "all"): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [path.join(ROOT, "dist/src/main.js"), role], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      TETHER_DATA_DIR: dataDir,
      NO_SMEE_SETUP: "true",
      TETHER_ENV_FILE: "",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  child.stdout?.on("data", (d) => (out += d));
  child.stderr?.on("data", (d) => (out += d));
  return { child, output: () => out };
}

/**
 * Start the app and wait until it serves: without APP_ID, "all" serves the setup page (there is
 * no /healthz there) and a runner-only process serves /healthz with the database check.
 */
async function startApp(
  port: number,
  role: Role = "all",
): Promise<{ child: ChildProcess; output: () => string }> {
  const app = spawnApp(port, role);
  const ready = role === "all" ? "/probot" : "/healthz";
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (app.child.exitCode !== null) throw new Error(`app exited early:\n${app.output()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}${ready}`);
      if (res.status === 200) return app;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`app did not serve on ${port}:\n${app.output()}`);
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });
}

describe("the tether process", () => {
  it("serves the setup page on PORT with the embedded database, and SIGTERM stops it and its Postgres within 10 s", async () => {
    const port = await freePort();
    const { child } = await startApp(port);
    expect(postgresPids().length).toBeGreaterThan(0);
    expect(fs.existsSync(lockFile)).toBe(true);
    const t0 = Date.now();
    child.kill("SIGTERM");
    expect(await exited(child)).toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(postgresPids()).toEqual([]);
    expect(fs.existsSync(lockFile)).toBe(false); // released on a clean shutdown
  }, 90_000);

  it("refuses a second process on the data directory while the first lives, and takes over once the first was killed with SIGKILL", async () => {
    const port = await freePort();
    const first = await startApp(port, "runner");
    const lock = JSON.parse(fs.readFileSync(lockFile, "utf8")) as LockOwner;
    expect(lock.pid).toBe(first.child.pid);
    expect(lock.port).toBeGreaterThan(0);
    const servers = postgresPids();
    expect(servers.length).toBeGreaterThan(0);

    // A second process on the same TETHER_DATA_DIR stops itself, before touching the server.
    const second = spawnApp(await freePort());
    const code = await Promise.race([
      exited(second.child),
      new Promise<"hung">((r) => setTimeout(() => r("hung"), 30_000)),
    ]);
    expect(code, second.output()).toBe(1);
    expect(second.output()).toContain("is in use");
    expect(second.output()).toContain(`another Tether process (pid ${first.child.pid}`);
    expect(second.output()).toContain(`127.0.0.1:${lock.port}`);
    expect(second.output()).toContain("DATABASE_URL");
    expect(second.output()).toContain("TETHER_DATA_DIR");
    expect(second.output()).not.toContain("orphaned embedded PostgreSQL");

    // The first still has its server and database: same postgres, healthy, writable.
    expect(postgresPids()).toEqual(servers);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ checks: { database: "ok" } });
    // As the refusal says: user tether, the password in the file beside the lock.
    const password = fs.readFileSync(path.join(dataDir, "postgres.password"), "utf8").trim();
    expect(second.output()).toContain(path.join(dataDir, "postgres.password"));
    expect(second.output()).not.toContain(password);
    const db = new pg.Client({
      connectionString: `postgres://tether:${password}@127.0.0.1:${lock.port}/postgres`,
    });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: string }>("select count(*) as n from tasks");
      expect(rows[0]?.n).toBe("0");
    } finally {
      await db.end();
    }
    expect(JSON.parse(fs.readFileSync(lockFile, "utf8"))).toEqual(lock);

    // SIGKILL leaves the lock and an orphaned postgres; the next start takes over both.
    first.child.kill("SIGKILL");
    await exited(first.child);
    expect(postgresPids().length).toBeGreaterThan(0); // the orphan
    expect(fs.existsSync(lockFile)).toBe(true);
    const third = await startApp(await freePort());
    expect(third.output()).toContain("taking over the data directory");
    expect(third.output()).toContain("orphaned embedded PostgreSQL");
    expect((JSON.parse(fs.readFileSync(lockFile, "utf8")) as LockOwner).pid).toBe(third.child.pid);
    third.child.kill("SIGTERM");
    expect(await exited(third.child)).toBe(0);
    expect(postgresPids()).toEqual([]);
    expect(fs.existsSync(lockFile)).toBe(false);
  }, 150_000);
});
