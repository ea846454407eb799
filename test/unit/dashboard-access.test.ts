import { describe, expect, it } from "vitest";
import {
  bearerToken,
  dashboardAccess,
  isLoopback,
  metricsAccess,
  parseCookies,
  sameSecret,
  SESSION_COOKIE,
  sessionCookieHeader,
  sessionCookieValue,
  verifySessionCookie,
} from "../../src/web/access.js";

const TOKEN = "dashboard-token-0123456789";
const NOW = new Date("2026-03-10T12:00:00Z");

/** The parts of an IncomingMessage the access checks read. */
function req(headers: Record<string, string> = {}, remoteAddress = "127.0.0.1") {
  return { headers, socket: { remoteAddress } } as unknown as Parameters<typeof dashboardAccess>[0];
}

describe("sameSecret", () => {
  it.each([
    [TOKEN, TOKEN, true],
    [TOKEN, `${TOKEN}x`, false],
    ["", TOKEN, false],
    [TOKEN.toUpperCase(), TOKEN, false],
    ["short", "a-much-longer-secret-value", false],
  ])("%j vs %j → %s", (a, b, same) => {
    expect(sameSecret(a, b)).toBe(same);
  });
});

describe("bearerToken", () => {
  it.each([
    ["Bearer abc", "abc"],
    ["bearer abc", "abc"],
    ["Bearer   abc  ", "abc"],
    ["Basic abc", undefined],
    ["Bearer", undefined],
    ["Bearer a b", undefined],
  ])("%j → %j", (header, token) => {
    expect(bearerToken(req({ authorization: header }))).toBe(token);
  });
});

describe("isLoopback", () => {
  it.each([
    ["127.0.0.1", {}, true],
    ["127.8.9.10", {}, true],
    ["::1", {}, true],
    ["::ffff:127.0.0.1", {}, true],
    ["10.0.0.5", {}, false],
    ["::ffff:192.168.1.2", {}, false],
    ["", {}, false],
    // A proxy on this host forwards other people's requests from loopback.
    ["127.0.0.1", { "x-forwarded-for": "203.0.113.9" }, false],
    ["127.0.0.1", { forwarded: "for=203.0.113.9" }, false],
    ["127.0.0.1", { "x-real-ip": "203.0.113.9" }, false],
  ] as const)("%s %j → %s", (addr, headers, local) => {
    expect(isLoopback(req({ ...headers }, addr))).toBe(local);
  });
});

describe("session cookie", () => {
  it("holds an expiry and an HMAC, never the token", () => {
    const value = sessionCookieValue(TOKEN, NOW);
    expect(value).not.toContain(TOKEN);
    expect(value).toMatch(/^\d+\.[\w-]{43}$/);
    expect(verifySessionCookie(value, TOKEN, NOW)).toBe(true);
  });

  it.each([
    ["another token", (v: string) => v, "another-token-0123456789abc", NOW],
    ["expired", (v: string) => v, TOKEN, new Date(NOW.getTime() + 8 * 24 * 3600_000)],
    ["a moved expiry", (v: string) => v.replace(/^\d+/, (d) => String(Number(d) + 1)), TOKEN, NOW],
    [
      "a flipped signature character",
      (v: string) => v.slice(0, -1) + (v.endsWith("A") ? "B" : "A"),
      TOKEN,
      NOW,
    ],
    ["garbage", () => "nonsense", TOKEN, NOW],
    ["empty", () => "", TOKEN, NOW],
  ])("is refused with %s", (_name, mutate, token, at) => {
    expect(verifySessionCookie(mutate(sessionCookieValue(TOKEN, NOW)), token, at)).toBe(false);
  });

  it("is HttpOnly and SameSite=Strict; Secure when the request came over TLS", () => {
    const plain = sessionCookieHeader("v", false);
    expect(plain).toContain("HttpOnly");
    expect(plain).toContain("SameSite=Strict");
    expect(plain).not.toContain("Secure");
    expect(sessionCookieHeader("v", true)).toContain("; Secure");
  });

  it("parseCookies takes the first of each name", () => {
    expect(parseCookies("a=1; b=2; a=3")).toEqual({ a: "1", b: "2" });
    expect(parseCookies(undefined)).toEqual({});
  });
});

describe("dashboardAccess", () => {
  const cookie = `${SESSION_COOKIE}=${sessionCookieValue(TOKEN, NOW)}`;
  it.each([
    // token configured: bearer or cookie, wherever the request comes from
    ["token, right bearer", TOKEN, { authorization: `Bearer ${TOKEN}` }, "10.0.0.5", "ok:bearer"],
    ["token, wrong bearer", TOKEN, { authorization: "Bearer nope" }, "127.0.0.1", 401],
    [
      "token, wrong bearer beats a good cookie",
      TOKEN,
      { authorization: "Bearer nope", cookie },
      "10.0.0.5",
      401,
    ],
    ["token, cookie", TOKEN, { cookie }, "10.0.0.5", "ok:cookie"],
    ["token, nothing, even from loopback", TOKEN, {}, "127.0.0.1", 401],
    // no token: loopback only, never open
    ["no token, loopback", undefined, {}, "127.0.0.1", "ok:loopback"],
    ["no token, remote", undefined, {}, "10.0.0.5", 403],
    ["no token, via a local proxy", undefined, { "x-forwarded-for": "1.2.3.4" }, "127.0.0.1", 403],
    [
      "no token, remote with a bearer",
      undefined,
      { authorization: `Bearer ${TOKEN}` },
      "10.0.0.5",
      403,
    ],
  ] as const)("%s", (_name, token, headers, addr, expected) => {
    const a = dashboardAccess(req({ ...headers }, addr), token, NOW);
    expect(a.ok ? `ok:${a.via}` : a.status).toBe(expected);
    if (!a.ok) expect(a.reason).not.toContain(TOKEN);
  });

  it("the 403 says how to turn the dashboard on", () => {
    const a = dashboardAccess(req({}, "10.0.0.5"), undefined, NOW);
    expect(!a.ok && a.reason).toMatch(/TETHER_DASHBOARD_TOKEN/);
  });
});

describe("metricsAccess", () => {
  it.each([
    [undefined, {}, "ok:open"],
    ["metrics-token-0123456789", {}, 401],
    ["metrics-token-0123456789", { authorization: "Bearer metrics-token-0123456789" }, "ok:bearer"],
    ["metrics-token-0123456789", { authorization: "Bearer metrics-token-012345678" }, 401],
  ] as const)("token %j, headers %j → %s", (token, headers, expected) => {
    const a = metricsAccess(req({ ...headers }, "10.0.0.5"), token);
    expect(a.ok ? `ok:${a.via}` : a.status).toBe(expected);
  });
});
