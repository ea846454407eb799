/**
 * Drill: the dashboard of the built app (web role) started without TETHER_DASHBOARD_TOKEN. It
 * makes a token at first start, keeps it in the data directory (0600), logs where and never
 * what, reuses it on the next start, and trusts no request for where it comes from: this
 * machine, without the token, gets nothing. A Host it does not know is refused; /healthz,
 * /metrics and the webhook answer any Host.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversationPath } from "../../src/core/conversation-path.js";
import { DASHBOARD_TOKEN_FILE } from "../../src/web/dashboard-token.js";
import {
  CHAIN_KEY,
  POISONED,
  POISONED_TRANSCRIPT,
  seedConversation,
} from "../helpers/conversation-seed.js";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, type Stack } from "../helpers/e2e-stack.js";

const db = await createTestDatabase();
let stack: Stack;
let tokenFile: string;

beforeAll(async () => {
  await seedConversation(db.pool, new Date());
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    env: { TETHER_ROLE: "web" },
  });
  tokenFile = path.join(stack.dataDir, DASHBOARD_TOKEN_FILE);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const readToken = () => fs.readFileSync(tokenFile, "utf8").trim();

/** Log lines (JSON) whose message matches. */
const logLines = (out: string, msg: RegExp) =>
  out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { msg: string; file?: string })
    .filter((l) => msg.test(l.msg));

function withHost(
  base: string,
  host: string,
  p: string,
  headers: Record<string, string> = {},
  method = "GET",
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${p}`, { method, headers: { ...headers, host } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("the dashboard of a process started without TETHER_DASHBOARD_TOKEN", () => {
  it("makes a token at first start, in a 0600 file, and logs where it is, never what", async () => {
    expect(fs.existsSync(tokenFile)).toBe(true);
    expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readToken();
    expect(token).toMatch(/^[\w-]{43}$/);
    const out = stack.app.output();
    const lines = logLines(out, /^dashboard token/);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.msg).toMatch(/^dashboard token made/);
    expect(lines[0]!.file).toBe(tokenFile);
    expect(out).not.toContain(token);
  });

  it("asks this machine for the token like anyone else", async () => {
    const base = stack.app.url; // http://127.0.0.1:<port>: the request comes from loopback
    const api = await fetch(`${base}/api/stats`);
    expect(api.status).toBe(401);
    expect(api.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const page = await fetch(`${base}/dashboard`);
    expect(page.status).toBe(401);
    const html = await page.text();
    expect(html).toContain('action="/dashboard/login"');
    expect(html).not.toContain('id="chart"');

    const token = readToken();
    const bearer = await fetch(`${base}/api/stats`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(bearer.status).toBe(200);
    // A browser signs in with the token from the file and gets its cookie.
    const signIn = await fetch(`${base}/dashboard?token=${token}`, { redirect: "manual" });
    expect(signIn.status).toBe(303);
    const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0]!;
    expect((await fetch(`${base}/api/stats`, { headers: { cookie } })).status).toBe(200);
    expect(stack.app.output()).not.toContain(token);
  });

  it("serves the signed-in page with its browser script inlined and nonced", async () => {
    // The built app reads the script from dist/ (npm run build copies it there), not from src/.
    const base = stack.app.url;
    const signIn = await fetch(`${base}/dashboard?token=${readToken()}`, { redirect: "manual" });
    const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0]!;
    const page = await fetch(`${base}/dashboard`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const nonce = /script-src 'nonce-([^']+)'/.exec(
      page.headers.get("content-security-policy") ?? "",
    )?.[1];
    expect(nonce).toBeTruthy();
    const script = fs.readFileSync(
      path.resolve(import.meta.dirname, "../../dist/src/web/browser/dashboard.js"),
      "utf8",
    );
    expect(script).toContain("selectRange(state.range);");
    expect(await page.text()).toContain(`<script nonce="${nonce}">\n${script}</script>`);
  });

  it("refuses a Host it does not know, and answers any Host on /healthz, /metrics and the webhook", async () => {
    const base = stack.app.url;
    const auth = { authorization: `Bearer ${readToken()}` };
    const rebound = await withHost(base, "attacker.example", "/api/stats", auth);
    expect(rebound.status).toBe(421);
    expect(rebound.body).toContain("TETHER_PUBLIC_HOSTS");
    expect((await withHost(base, "attacker.example", "/dashboard")).status).toBe(421);
    expect((await withHost(base, "localhost", "/api/stats", auth)).status).toBe(200);
    expect((await withHost(base, "lb.internal", "/healthz")).status).toBe(200);
    expect((await withHost(base, "lb.internal", "/metrics")).status).toBe(200);
    const hook = await withHost(
      base,
      "hooks.example",
      "/api/github/webhooks",
      {
        "content-type": "application/json",
        "x-github-event": "ping",
        "x-github-delivery": "host-check",
        "x-hub-signature-256": `sha256=${"0".repeat(64)}`,
      },
      "POST",
      "{}",
    );
    expect(hook.status).toBe(400); // the webhook route's own answer: the signature
  });

  it("gates the conversation page, its JSON and the transcript download like the rest", async () => {
    const base = stack.app.url;
    const page = conversationPath(CHAIN_KEY);
    const paths = [
      page,
      conversationPath(CHAIN_KEY, "/api/conversations"),
      `${page}/transcripts/${POISONED}`,
    ];
    const secret = POISONED_TRANSCRIPT.toString().split("\n")[1]!;
    const token = readToken();
    for (const p of paths) {
      const tries: Record<string, string>[] = [
        {},
        { authorization: "Bearer not-the-dashboard-token" },
      ];
      for (const headers of tries) {
        const res = await fetch(`${base}${p}`, { headers, redirect: "manual" });
        expect(res.status, p).toBe(401);
        const body = await res.text();
        expect(body).not.toContain("tether/issue-42");
        expect(body).not.toContain("secret repo contents");
        expect(body).not.toContain(secret);
      }
      const rebound = await withHost(base, "attacker.example", p, {
        authorization: `Bearer ${token}`,
      });
      expect(rebound.status, p).toBe(421);
      expect(rebound.body).not.toContain("tether/issue-42");
      const ok = await fetch(`${base}${p}`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status, p).toBe(200);
    }
    // The page reached from an answer's footer: signed out, the sign-in comes back to it.
    const signIn = await fetch(`${base}${page}`);
    expect(await signIn.text()).toContain(`name="next" value="${page}"`);
  });

  it("reuses the token on the next start, and admits the names in TETHER_PUBLIC_HOSTS", async () => {
    const token = readToken();
    await stack.app.stop();
    const app = await stack.startApp({
      TETHER_ROLE: "web",
      TETHER_PUBLIC_HOSTS: "tether.example.com",
    });
    expect(readToken()).toBe(token);
    const lines = logLines(app.output(), /^dashboard token/);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.msg).toMatch(/^dashboard token read/);
    expect(lines[0]!.file).toBe(tokenFile);
    const auth = { authorization: `Bearer ${token}` };
    expect((await withHost(app.url, "tether.example.com", "/api/stats", auth)).status).toBe(200);
    expect((await withHost(app.url, "attacker.example", "/api/stats", auth)).status).toBe(421);
    expect(app.output()).not.toContain(token);
  });

  it("a token set in the environment wins, and no file is read or made for it", async () => {
    await stack.app.stop();
    fs.rmSync(tokenFile);
    const set = "operator-set-dashboard-token-0123456789";
    const app = await stack.startApp({ TETHER_ROLE: "web", TETHER_DASHBOARD_TOKEN: set });
    expect(fs.existsSync(tokenFile)).toBe(false);
    expect(logLines(app.output(), /^dashboard token/)).toHaveLength(0);
    const ok = await fetch(`${app.url}/api/stats`, { headers: { authorization: `Bearer ${set}` } });
    expect(ok.status).toBe(200);
    expect((await fetch(`${app.url}/api/stats`)).status).toBe(401);
  });
});
