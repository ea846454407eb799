/**
 * The live view's signed link (#40): `/live/<task id>?exp=<unix seconds>&sig=<hmac>`, where the
 * HMAC-SHA256 is keyed by the key Tether keeps in Postgres (live_link_key, one for every
 * process) over the task id and the expiry. Whoever holds the link sees that one task's live
 * page and its event stream until the expiry; the signature names nothing else, so nothing
 * else opens with it.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

const CONTEXT = "tether-live-link";

export interface LiveSignature {
  exp: number;
  sig: string;
}

function mac(key: Buffer, taskId: number, exp: number): string {
  return createHmac("sha256", key).update(`${CONTEXT}:${taskId}:${exp}`).digest("base64url");
}

/** The signature of `taskId`'s link, valid until `expiresAt`. */
export function signLiveLink(key: Buffer, taskId: number, expiresAt: Date): LiveSignature {
  const exp = Math.floor(expiresAt.getTime() / 1000);
  return { exp, sig: mac(key, taskId, exp) };
}

/** The live page's path for a task, without its signature. */
export function livePath(taskId: number): string {
  return `/live/${taskId}`;
}

/** The live page's address, signed (mode "on") or for the dashboard's token ("token"). */
export function liveUrl(
  publicUrl: string,
  taskId: number,
  signature: LiveSignature | null,
): string {
  const base = `${publicUrl.replace(/\/+$/, "")}${livePath(taskId)}`;
  return signature ? `${base}?exp=${signature.exp}&sig=${signature.sig}` : base;
}

export type LinkCheck = { ok: true } | { ok: false; reason: string };

/**
 * Checks a presented (exp, sig) for `taskId`: well formed, not expired, and the HMAC of this
 * task's id with that expiry (compared in constant time).
 */
export function verifyLiveLink(
  key: Buffer,
  taskId: number,
  exp: string | null,
  sig: string | null,
  now: Date,
): LinkCheck {
  if (!exp || !sig || !/^\d{1,12}$/.test(exp) || !/^[\w-]{43}$/.test(sig)) {
    return {
      ok: false,
      reason: "This link is not signed: open it as the tracking comment gives it.",
    };
  }
  const expected = Buffer.from(mac(key, taskId, Number(exp)));
  const presented = Buffer.from(sig);
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    return { ok: false, reason: "This link's signature does not match this turn." };
  }
  if (Number(exp) * 1000 <= now.getTime()) {
    return { ok: false, reason: "This link has expired (TETHER_LIVE_LINK_DAYS after its turn)." };
  }
  return { ok: true };
}
