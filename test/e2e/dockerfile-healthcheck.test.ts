/**
 * The image's HEALTHCHECK against the real, built process: a runner-only process (as in a
 * "runner" container) serves /healthz and /metrics on PORT, reports its runner, and turns
 * unhealthy when its database goes away.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../../src/db/embedded.js";
import { createTestDatabase } from "../helpers/db.js";
import { startFakeGitHub } from "../helpers/fake-github.js";
import { runHealthcheck } from "../helpers/healthcheck.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const db = await createTestDatabase();
const gh = await startFakeGitHub();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-health-"));
fs.mkdirSync(path.join(tmp, "home"));
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child!.once("exit", r));
    child.kill("SIGKILL");
    await exited;
  }
  await gh.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The HEALTHCHECK's exec-form command, as written in the Dockerfile. */
function healthcheckCommand(): string[] {
  const text = fs.readFileSync(path.join(ROOT, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
  const json = /^HEALTHCHECK\b.*?\bCMD\s+(\[.*\])\s*$/m.exec(text)?.[1];
  if (!json) throw new Error("no exec-form HEALTHCHECK in the Dockerfile");
  return JSON.parse(json) as string[];
}

const healthcheck = (port: number) => runHealthcheck(healthcheckCommand(), port);

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("a runner container's health", () => {
  it("serves /healthz and /metrics on PORT, passes the HEALTHCHECK, and fails it when the database goes", async () => {
    const port = await freePort();
    let out = "";
    child = spawn(process.execPath, [path.join(ROOT, "dist/src/main.js"), "runner"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: path.join(tmp, "home"),
        ...gh.appEnv("health-webhook-secret"),
        DATABASE_URL: db.url,
        // As in the image.
        HOST: "0.0.0.0",
        PORT: String(port),
        TETHER_DATA_DIR: path.join(tmp, "data"),
        TETHER_RUNTIME_ID: "rt-health",
        TETHER_ENV_FILE: "",
        TETHER_SHUTDOWN_TIMEOUT_MS: "2000",
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (d) => (out += d));
    child.stderr?.on("data", (d) => (out += d));
    const base = `http://127.0.0.1:${port}`;

    const body = await until("a healthy runner", async () => {
      if (child!.exitCode !== null) throw new Error(`exited early:\n${out}`);
      const res = await fetch(`${base}/healthz`);
      return res.ok ? ((await res.json()) as unknown) : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n--- output ---\n${out.slice(-4000)}`);
    });
    expect(body).toEqual({
      ok: true,
      checks: { process: "ok", database: "ok", runner: "ok", sandbox: "ok" },
    });
    expect(await healthcheck(port)).toBe(0);

    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toContain("tether_runners_alive 1");
    expect(text).toContain("process_cpu_seconds_total");
    // A runner has no webhook endpoint or dashboard.
    expect((await fetch(`${base}/api/github/webhooks`, { method: "POST" })).status).toBe(404);
    expect((await fetch(`${base}/dashboard`)).status).toBe(404);

    // The database goes away under the running process.
    const admin = new pg.Client({ connectionString: inject("pgAdminUrl") });
    await admin.connect();
    await admin.query(`DROP DATABASE ${db.name} WITH (FORCE)`);
    await admin.end();
    const down = await until(
      "/healthz to report the database",
      async () => {
        const res = await fetch(`${base}/healthz`);
        return res.status === 503
          ? ((await res.json()) as { checks: Record<string, string> })
          : undefined;
      },
      15_000,
    );
    expect(down.checks.database).toMatch(/^unreachable: .*does not exist/);
    expect(await healthcheck(port)).toBe(1);

    const exited = new Promise<number | null>((r) => child!.once("exit", (code) => r(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 90_000);
});
