import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/**
 * Who may see the dashboard, the stats API and the metrics.
 *
 * Secrets are compared as SHA-256 digests with timingSafeEqual: equal-length inputs, so the
 * comparison takes the same time whatever the presented value, and its length leaks nothing.
 * Browsers get a cookie holding an HMAC keyed by the token (never the token itself), with an
 * expiry inside the signed value, so changing the token signs everyone out.
 */

export type Access =
  | { ok: true; via: "bearer" | "cookie" | "loopback" | "open" }
  | { ok: false; status: 401 | 403; reason: string };

export const SESSION_COOKIE = "tether_dashboard";
/** How long a browser stays signed in. */
export const SESSION_TTL_S = 7 * 24 * 3600;
const COOKIE_CONTEXT = "tether-dashboard-session";

/** Constant-time equality of two secrets of any length. */
export function sameSecret(presented: string, expected: string): boolean {
  const a = createHash("sha256").update(presented, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header, if there is one. */
export function bearerToken(req: Pick<IncomingMessage, "headers">): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1];
}

export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name && !(name in out)) out[name] = value;
  }
  return out;
}

function sign(token: string, expiresAt: number): string {
  return createHmac("sha256", token).update(`${COOKIE_CONTEXT}:${expiresAt}`).digest("base64url");
}

/** The cookie value for a browser that proved it knows `token`: `<expiry>.<hmac>`. */
export function sessionCookieValue(token: string, now: Date, ttlS = SESSION_TTL_S): string {
  const expiresAt = Math.floor(now.getTime() / 1000) + ttlS;
  return `${expiresAt}.${sign(token, expiresAt)}`;
}

export function verifySessionCookie(value: string | undefined, token: string, now: Date): boolean {
  if (!value) return false;
  const match = /^(\d{1,12})\.([\w-]{43})$/.exec(value);
  if (!match?.[1] || !match[2]) return false;
  const expiresAt = Number(match[1]);
  if (expiresAt * 1000 <= now.getTime()) return false;
  const expected = Buffer.from(sign(token, expiresAt));
  const presented = Buffer.from(match[2]);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

export function sessionCookieHeader(value: string, secure: boolean, maxAgeS = SESSION_TTL_S) {
  return [
    `${SESSION_COOKIE}=${value}`,
    "Path=/",
    "HttpOnly",
    "SameSite=Strict",
    `Max-Age=${maxAgeS}`,
    ...(secure ? ["Secure"] : []),
  ].join("; ");
}

export function clearSessionCookieHeader(): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`;
}

/** True when the client reached us over TLS, directly or through a proxy that says so. */
export function isHttps(req: Pick<IncomingMessage, "headers" | "socket">): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted) return true;
  const proto = req.headers["x-forwarded-proto"];
  return (Array.isArray(proto) ? proto[0] : proto)?.split(",")[0]?.trim() === "https";
}

const FORWARDING_HEADERS = ["forwarded", "x-forwarded-for", "x-real-ip"] as const;

/**
 * A request from this machine itself. A reverse proxy on the same host also connects from
 * loopback, on behalf of anyone: a request that carries forwarding headers is therefore not
 * treated as local.
 */
export function isLoopback(req: Pick<IncomingMessage, "headers" | "socket">): boolean {
  if (FORWARDING_HEADERS.some((h) => req.headers[h] !== undefined)) return false;
  const addr = req.socket.remoteAddress ?? "";
  return (
    addr === "::1" || /^127\.\d+\.\d+\.\d+$/.test(addr) || /^::ffff:127\.\d+\.\d+\.\d+$/i.test(addr)
  );
}

/**
 * /dashboard and /api/stats: the bearer token or a signed cookie when a token is configured;
 * otherwise only requests from this machine, never open to the network.
 */
export function dashboardAccess(
  req: Pick<IncomingMessage, "headers" | "socket">,
  token: string | undefined,
  now: Date,
): Access {
  if (token === undefined) {
    if (isLoopback(req)) return { ok: true, via: "loopback" };
    return {
      ok: false,
      status: 403,
      reason:
        "The dashboard is off: TETHER_DASHBOARD_TOKEN is not set, so it answers only requests " +
        "made on this machine without a proxy. Set TETHER_DASHBOARD_TOKEN (16+ characters) to open it.",
    };
  }
  const presented = bearerToken(req);
  if (presented !== undefined) {
    return sameSecret(presented, token)
      ? { ok: true, via: "bearer" }
      : {
          ok: false,
          status: 401,
          reason: "The bearer token does not match TETHER_DASHBOARD_TOKEN.",
        };
  }
  if (verifySessionCookie(parseCookies(req.headers.cookie)[SESSION_COOKIE], token, now)) {
    return { ok: true, via: "cookie" };
  }
  return {
    ok: false,
    status: 401,
    reason:
      "Sign in: send Authorization: Bearer <TETHER_DASHBOARD_TOKEN>, or open /dashboard and enter the token.",
  };
}

/** /metrics: the metrics token when one is configured, open otherwise. */
export function metricsAccess(
  req: Pick<IncomingMessage, "headers">,
  token: string | undefined,
): Access {
  if (token === undefined) return { ok: true, via: "open" };
  const presented = bearerToken(req);
  if (presented !== undefined && sameSecret(presented, token)) return { ok: true, via: "bearer" };
  return {
    ok: false,
    status: 401,
    reason:
      presented === undefined
        ? "/metrics needs Authorization: Bearer <TETHER_METRICS_TOKEN>."
        : "The bearer token does not match TETHER_METRICS_TOKEN.",
  };
}
