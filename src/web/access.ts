import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";

/**
 * Who may see the dashboard, the stats API and the metrics.
 *
 * Secrets are compared as SHA-256 digests with timingSafeEqual: equal-length inputs, so the
 * comparison takes the same time whatever the presented value, and its length leaks nothing.
 * Browsers get a cookie holding an HMAC keyed by the token (never the token itself), with an
 * expiry inside the signed value, so changing the token signs everyone out.
 */

export type Access =
  | { ok: true; via: "bearer" | "cookie" | "open" }
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

/**
 * /dashboard and /api/stats: the bearer token or a signed cookie, whoever asks. Where the
 * request comes from counts for nothing: a reverse proxy, a tunnel or the agent itself all ask
 * from loopback. Without a token (only when something embeds the routes without one) every
 * request is refused.
 */
export function dashboardAccess(
  req: Pick<IncomingMessage, "headers">,
  token: string | undefined,
  now: Date,
): Access {
  if (token === undefined) {
    return {
      ok: false,
      status: 403,
      reason:
        "The dashboard has no token, so it is closed. Set TETHER_DASHBOARD_TOKEN (16+ characters), " +
        "or let Tether make one in its data directory.",
    };
  }
  const presented = bearerToken(req);
  if (presented !== undefined) {
    return sameSecret(presented, token)
      ? { ok: true, via: "bearer" }
      : {
          ok: false,
          status: 401,
          reason: "The bearer token does not match the dashboard token.",
        };
  }
  if (verifySessionCookie(parseCookies(req.headers.cookie)[SESSION_COOKIE], token, now)) {
    return { ok: true, via: "cookie" };
  }
  return {
    ok: false,
    status: 401,
    reason:
      "Sign in: send Authorization: Bearer <dashboard token>, or open /dashboard and enter the token " +
      "(TETHER_DASHBOARD_TOKEN, or the file <TETHER_DATA_DIR>/dashboard-token Tether made).",
  };
}

/**
 * The host a request names (its Host header), lower case, without port or trailing dot;
 * IPv6 literals keep their brackets off. Undefined when there is none or it is malformed.
 */
export function requestHost(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const h = header.trim().toLowerCase();
  const v6 = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h);
  if (v6) return v6[1];
  const m = /^([^:\s/@]+?)\.?(?::\d{1,5})?$/.exec(h);
  return m?.[1] || undefined;
}

/**
 * May the dashboard answer a request naming this Host? A page on another site can make a
 * browser send it requests by pointing that site's name at this machine (DNS rebinding); its
 * requests still name that site. So: `localhost`, any IP address (an address cannot be
 * rebound: a page at http://203.0.113.5/ is that machine's), and the names the operator lists
 * in TETHER_PUBLIC_HOSTS. Nothing else, not even the machine's own name, unless listed.
 */
export function hostAllowed(header: string | undefined, publicHosts: readonly string[]): boolean {
  const host = requestHost(header);
  if (host === undefined) return false;
  if (host === "localhost" || isIP(host) !== 0) return true;
  return publicHosts.includes(host);
}

/** Why a Host was refused, naming it (shown to whoever sent it; it holds no secret). */
export function hostRefusal(header: string | undefined): string {
  const shown = header === undefined ? "none" : JSON.stringify(header.slice(0, 200));
  return (
    `The dashboard does not answer to the host this request names (Host: ${shown}). ` +
    "If you reach Tether under that name, add it to TETHER_PUBLIC_HOSTS (comma-separated); " +
    "localhost and IP addresses are always accepted."
  );
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
