/**
 * GET /healthz over real HTTP against a real database, and against databases that refuse or
 * never answer.
 */
import net from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { createPool } from "../../src/db/pool.js";
import { freePort } from "../../src/db/embedded.js";
import type { AppDeps } from "../../src/deps.js";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { healthRoutes } from "../../src/web/health.js";
import { serveHandlers } from "../../src/web/http.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();
const log = createLogger("silent");
const env = loadEnv({});
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

async function serve(deps: Partial<AppDeps>, dbTimeoutMs?: number): Promise<string> {
  const served = await serveHandlers([
    healthRoutes({ env, log, pool: db.pool, ...deps }, dbTimeoutMs ? { dbTimeoutMs } : {}),
  ]);
  closers.push(() => served.close());
  return served.url;
}

async function health(url: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}/healthz`, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

describe("GET /healthz", () => {
  it.each([
    {
      name: "a web process with its database",
      deps: {},
      status: 200,
      checks: { process: "ok", database: "ok" },
    },
    {
      name: "a process whose runner heartbeats",
      deps: { runnerAlive: () => true },
      status: 200,
      checks: { process: "ok", database: "ok", runner: "ok" },
    },
    {
      name: "a process whose runner stopped heartbeating",
      deps: { runnerAlive: () => false },
      status: 503,
      checks: { process: "ok", database: "ok", runner: "not heartbeating" },
    },
  ])("$name → $status", async ({ deps, status, checks }) => {
    const url = await serve(deps);
    const res = await health(url);
    expect(res).toEqual({ status, body: { ok: status === 200, checks } });
  });

  it("503 naming the error when the database refuses connections", async () => {
    const pool = createPool(`postgres://tether:tether@127.0.0.1:${await freePort()}/none`);
    closers.push(() => pool.end());
    const res = await health(await serve({ pool }));
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      ok: false,
      checks: { process: "ok", database: expect.stringMatching(/^unreachable: .*ECONNREFUSED/) },
    });
  });

  it("503 within its deadline when the database never answers", async () => {
    // Accepts connections and says nothing: a hung server or a black-holed network.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((s) => void sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const port = (silent.address() as net.AddressInfo).port;
    const pool = createPool(`postgres://tether:tether@127.0.0.1:${port}/none`);
    closers.push(() => pool.end().catch(() => {}));
    // Closed first (closers run in reverse): the pool's pending connect then fails at once.
    closers.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    });
    const t0 = Date.now();
    const res = await health(await serve({ pool }, 300));
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(res).toEqual({
      status: 503,
      body: { ok: false, checks: { process: "ok", database: "no answer within 300 ms" } },
    });
  });

  it("answers only GET /healthz", async () => {
    const url = await serve({});
    expect((await fetch(`${url}/healthz`, { method: "POST" })).status).toBe(404);
    expect((await fetch(`${url}/healthz/x`)).status).toBe(404);
    expect((await fetch(`${url}/healthz?verbose=1`)).status).toBe(200);
  });
});
