import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Probot } from "probot";
import { serveTether } from "../../src/app.js";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { SESSION_COOKIE } from "../../src/web/access.js";
import { dashboardRoutes } from "../../src/web/dashboard-routes.js";
import { serveHandlers, type Served } from "../../src/web/http.js";
import { NOW, seedDashboardFixture } from "../helpers/dashboard-seed.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();
const TOKEN = "dashboard-test-token-0123456789";
const log = createLogger("silent");
const servers: Served[] = [];

async function serve(env: Record<string, string>): Promise<Served> {
  const s = await serveHandlers([
    dashboardRoutes({
      env: loadEnv({ LOG_LEVEL: "silent", ...env }),
      log,
      pool: db.pool,
      now: () => NOW,
    }),
  ]);
  servers.push(s);
  return s;
}

let secured: Served;
let tokenless: Served;
let published: Served;
beforeAll(async () => {
  await seedDashboardFixture(db.pool);
  secured = await serve({ TETHER_DASHBOARD_TOKEN: TOKEN });
  tokenless = await serve({});
  published = await serve({
    TETHER_DASHBOARD_TOKEN: TOKEN,
    TETHER_PUBLIC_HOSTS: "tether.example.com,ops.example.net",
  });
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const get = (s: Served, path: string, headers: Record<string, string> = {}) =>
  fetch(`${s.url}${path}`, { headers, redirect: "manual" });
const cookieOf = (res: Response): string =>
  (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";

/** A request with a Host header of our choosing (fetch always sends the URL's own). */
function withHost(
  s: Pick<Served, "url">,
  host: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${s.url}${path}`,
      { method: opts.method ?? "GET", headers: { ...opts.headers, host } },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

describe("with TETHER_DASHBOARD_TOKEN", () => {
  it("/api/stats: 401 JSON without a token or with a wrong one, 200 with the bearer token", async () => {
    const none = await get(secured, "/api/stats");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(((await none.json()) as { error: string }).error).toMatch(/Bearer/);
    expect((await get(secured, "/api/stats", { authorization: "Bearer wrong" })).status).toBe(401);
    const ok = await get(secured, "/api/stats?range=7d", { authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toMatch(/application\/json/);
    const body = (await ok.json()) as { range: string; resumeRate: number };
    expect(body.range).toBe("7d");
    expect(body.resumeRate).toBe(4 / 7);
  });

  it("/dashboard without credentials shows the sign-in form, not the page", async () => {
    const res = await get(secured, "/dashboard");
    expect(res.status).toBe(401);
    const html = await res.text();
    expect(html).toContain('action="/dashboard/login"');
    expect(html).toContain('type="password"');
    expect(html).not.toContain('id="chart"');
  });

  it("?token= sets a cookie holding no token and redirects to a URL without it", async () => {
    const res = await get(secured, `/dashboard?range=7d&token=${encodeURIComponent(TOKEN)}`);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/dashboard?range=7d");
    const setCookie = res.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(new RegExp(`^${SESSION_COOKIE}=`));
    expect(setCookie).toContain("HttpOnly");
    expect(setCookie).toContain("SameSite=Strict");
    expect(setCookie).not.toContain(TOKEN);
    const cookie = cookieOf(res);
    const page = await get(secured, "/dashboard?range=7d", { cookie });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('id="chart"');
    expect((await get(secured, "/api/stats", { cookie })).status).toBe(200);
  });

  it("a wrong ?token= gets the sign-in form and no cookie", async () => {
    const res = await get(secured, "/dashboard?token=wrong-token-wrong-token");
    expect(res.status).toBe(401);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await res.text()).toContain("does not match");
  });

  it("the sign-in form: a wrong token is refused, the right one signs in; sign-out clears it", async () => {
    const post = (body: string) =>
      fetch(`${secured.url}/dashboard/login`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body,
        redirect: "manual",
      });
    const wrong = await post("token=nope");
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    const right = await post(`token=${encodeURIComponent(TOKEN)}`);
    expect(right.status).toBe(303);
    expect(right.headers.get("location")).toBe("/dashboard");
    const cookie = cookieOf(right);
    expect((await get(secured, "/dashboard", { cookie })).status).toBe(200);
    const out = await fetch(`${secured.url}/dashboard/logout`, {
      method: "POST",
      headers: { cookie },
      redirect: "manual",
    });
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toMatch(/Max-Age=0/);
  });

  it("a huge sign-in body is refused without reading it all", async () => {
    const res = await fetch(`${secured.url}/dashboard/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${"x".repeat(100_000)}`,
      redirect: "manual",
    }).catch(() => undefined);
    // Either the 413 page arrives or the server cuts the upload short; never a sign-in.
    if (res) expect(res.status).toBe(413);
  });

  it("the page carries a strict Content-Security-Policy and its script is nonced", async () => {
    const res = await get(secured, "/dashboard", { authorization: `Bearer ${TOKEN}` });
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    const html = await res.text();
    expect(html).toContain(`<script nonce="${nonce}">`);
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
  });
});

describe("no trust in where a request comes from", () => {
  it("a request from this machine, without proxy headers, still needs the token", async () => {
    // The test client connects from 127.0.0.1, as a reverse proxy, a tunnel or the agent would.
    const api = await get(secured, "/api/stats");
    expect(api.status).toBe(401);
    const page = await get(secured, "/dashboard");
    expect(page.status).toBe(401);
    expect(await page.text()).not.toContain('id="chart"');
    expect((await get(secured, "/api/stats", { authorization: `Bearer ${TOKEN}` })).status).toBe(
      200,
    );
  });

  it("routes given no token at all are closed, to this machine too, and say why", async () => {
    const api = await get(tokenless, "/api/stats");
    expect(api.status).toBe(403);
    expect(((await api.json()) as { error: string }).error).toMatch(/TETHER_DASHBOARD_TOKEN/);
    const page = await get(tokenless, "/dashboard");
    expect(page.status).toBe(403);
    expect(await page.text()).toContain("TETHER_DASHBOARD_TOKEN");
    const login = await fetch(`${tokenless.url}/dashboard/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "token=x",
      redirect: "manual",
    });
    expect(login.status).toBe(403);
    expect(login.headers.get("set-cookie")).toBeNull();
  });
});

describe("the Host header (DNS rebinding)", () => {
  const bearer = { authorization: `Bearer ${TOKEN}` };

  it("a name not listed gets 421 with the token, the sign-in form and the ?token= link alike", async () => {
    const api = await withHost(secured, "evil.example", "/api/stats", { headers: bearer });
    expect(api.status).toBe(421);
    expect((JSON.parse(api.body) as { error: string }).error).toMatch(
      /Host: "evil\.example".*TETHER_PUBLIC_HOSTS/,
    );
    const page = await withHost(secured, "evil.example:3000", "/dashboard", { headers: bearer });
    expect(page.status).toBe(421);
    expect(page.body).toContain("TETHER_PUBLIC_HOSTS");
    expect(page.body).not.toContain('id="chart"');
    expect(page.body).not.toContain('action="/dashboard/login"');
    const link = await withHost(secured, "evil.example", `/dashboard?token=${TOKEN}`);
    expect(link.status).toBe(421);
    expect(link.headers["set-cookie"]).toBeUndefined();
    const login = await withHost(secured, "evil.example", "/dashboard/login", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${TOKEN}`,
    });
    expect(login.status).toBe(421);
    expect(login.headers["set-cookie"]).toBeUndefined();
    // Not even the machine's own name, unless it is listed.
    expect((await withHost(secured, "my-machine", "/api/stats", { headers: bearer })).status).toBe(
      421,
    );
  });

  it("localhost and IP addresses are answered", async () => {
    for (const host of ["localhost:3000", "127.0.0.1", "[::1]:8080", "192.0.2.10:3000"]) {
      const res = await withHost(secured, host, "/api/stats", { headers: bearer });
      expect(res.status, host).toBe(200);
    }
  });

  it("names in TETHER_PUBLIC_HOSTS are answered, in any case and on any port", async () => {
    for (const host of ["tether.example.com", "TETHER.example.com:443", "ops.example.net:8443"]) {
      const res = await withHost(published, host, "/api/stats", { headers: bearer });
      expect(res.status, host).toBe(200);
    }
    const other = await withHost(published, "example.com", "/api/stats", { headers: bearer });
    expect(other.status).toBe(421);
    // The check comes first: no token, wrong host → 421, not 401.
    expect((await withHost(published, "evil.example", "/api/stats")).status).toBe(421);
  });
});

describe("tetherApp wiring", () => {
  it("serves /dashboard, /api/stats and /metrics as main.ts serves them", async () => {
    const deps = {
      env: loadEnv({ TETHER_DASHBOARD_TOKEN: TOKEN, LOG_LEVEL: "silent" }),
      log,
      pool: db.pool,
      now: () => NOW,
    };
    const server = await serveTether(
      deps,
      new Probot({ appId: 1, privateKey: "unused in this test", log }),
    );
    try {
      const base = server.url;
      const auth = { authorization: `Bearer ${TOKEN}` };
      const stats = await fetch(`${base}/api/stats`, { headers: auth });
      expect(stats.status).toBe(200);
      expect(((await stats.json()) as { resumeRate: number }).resumeRate).toBe(0.5);
      expect((await fetch(`${base}/dashboard`, { headers: auth })).status).toBe(200);
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain("tether_queue_depth");
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      // Any Host for what GitHub, load balancers and scrapers call; the dashboard refuses it.
      const at = { url: base };
      expect((await withHost(at, "evil.example", "/healthz")).status).toBe(200);
      expect((await withHost(at, "evil.example", "/metrics")).status).toBe(200);
      expect((await withHost(at, "evil.example", "/api/stats", { headers: auth })).status).toBe(
        421,
      );
      const hook = await withHost(at, "evil.example", "/api/github/webhooks", {
        method: "POST",
        headers: {
          "x-github-event": "issues",
          "x-github-delivery": "d-1",
          "x-hub-signature-256": "sha256=00",
        },
        body: "{}",
      });
      expect(hook.status).toBe(400);
      expect(JSON.parse(hook.body)).toEqual({ error: "signature does not match" });
    } finally {
      await server.close();
    }
  });
});
