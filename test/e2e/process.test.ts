import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/embedded.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-proc-"));
fs.chmodSync(dataDir, 0o755);
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  postgresPids().forEach((pid) => process.kill(pid, "SIGKILL"));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** PIDs of postgres servers whose data directory is ours. */
function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmd.includes("postgres") && cmd.includes(dataDir)) pids.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  return pids;
}

async function startApp(port: number): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [path.join(ROOT, "dist/src/main.js")], {
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
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`app exited early:\n${out}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/probot`);
      if (res.status === 200) return { child, output: () => out };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`app did not serve on ${port}:\n${out}`);
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
    const t0 = Date.now();
    child.kill("SIGTERM");
    expect(await exited(child)).toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(postgresPids()).toEqual([]);
  }, 90_000);

  it("starts again after the app was killed with SIGKILL, taking over the orphaned Postgres", async () => {
    const port = await freePort();
    const first = await startApp(port);
    first.child.kill("SIGKILL");
    await exited(first.child);
    expect(postgresPids().length).toBeGreaterThan(0); // the orphan
    const second = await startApp(await freePort());
    expect(second.output()).toContain("orphaned embedded PostgreSQL");
    second.child.kill("SIGTERM");
    expect(await exited(second.child)).toBe(0);
    expect(postgresPids()).toEqual([]);
  }, 120_000);
});
