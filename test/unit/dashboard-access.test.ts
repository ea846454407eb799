import { describe, expect, it } from "vitest";
import {
  bearerToken,
  dashboardAccess,
  hostAllowed,
  hostRefusal,
  metricsAccess,
  parseCookies,
  requestHost,
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
    // bearer or cookie, wherever the request comes from
    ["right bearer", TOKEN, { authorization: `Bearer ${TOKEN}` }, "10.0.0.5", "ok:bearer"],
    ["wrong bearer", TOKEN, { authorization: "Bearer nope" }, "127.0.0.1", 401],
    [
      "wrong bearer beats a good cookie",
      TOKEN,
      { authorization: "Bearer nope", cookie },
      "10.0.0.5",
      401,
    ],
    ["cookie", TOKEN, { cookie }, "10.0.0.5", "ok:cookie"],
    // where a request comes from counts for nothing: a proxy, a tunnel, the agent all ask from here
    ["nothing, from loopback", TOKEN, {}, "127.0.0.1", 401],
    ["nothing, from ::1", TOKEN, {}, "::1", 401],
    ["nothing, from remote", TOKEN, {}, "10.0.0.5", 401],
    // no token at all (routes embedded without one): closed, never open, not even locally
    ["no token, loopback", undefined, {}, "127.0.0.1", 403],
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

  it("the 401 says how to sign in and where the token is", () => {
    const a = dashboardAccess(req({}, "127.0.0.1"), TOKEN, NOW);
    expect(!a.ok && a.reason).toMatch(/TETHER_DASHBOARD_TOKEN.*dashboard-token/);
  });
});

describe("requestHost", () => {
  it.each([
    ["localhost:3000", "localhost"],
    ["LOCALHOST", "localhost"],
    ["localhost.", "localhost"],
    ["127.0.0.1:3000", "127.0.0.1"],
    ["[::1]:3000", "::1"],
    ["[::1]", "::1"],
    ["Tether.Example.com:443", "tether.example.com"],
    ["", undefined],
    [undefined, undefined],
    ["a b", undefined],
    ["user@evil.example", undefined],
    ["evil.example/path", undefined],
    ["[::1", undefined],
  ] as const)("%j → %j", (header, host) => {
    expect(requestHost(header)).toBe(host);
  });
});

describe("hostAllowed", () => {
  const listed = ["tether.example.com"];
  it.each([
    // loopback names and IP addresses: a page cannot rebind an address
    ["localhost:3000", [], true],
    ["127.0.0.1:3000", [], true],
    ["[::1]:3000", [], true],
    ["192.168.1.20:3000", [], true],
    ["[2001:db8::7]", [], true],
    // names only when listed, in any case and with any port
    ["tether.example.com", listed, true],
    ["TETHER.example.com:8443", listed, true],
    ["tether.example.com.", listed, true],
    ["tether.example.com", [], false],
    ["evil.example", listed, false],
    ["sub.tether.example.com", listed, false],
    ["tether.example.com.evil.example", listed, false],
    ["localhost.evil.example", [], false],
    ["my-machine", [], false],
    [undefined, listed, false],
    ["", listed, false],
  ] as const)("%j with %j → %s", (header, hosts, allowed) => {
    expect(hostAllowed(header, hosts)).toBe(allowed);
  });

  it("the refusal names the host and the setting that admits it", () => {
    expect(hostRefusal("evil.example")).toMatch(/Host: "evil\.example".*TETHER_PUBLIC_HOSTS/);
    expect(hostRefusal(undefined)).toMatch(/Host: none/);
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
