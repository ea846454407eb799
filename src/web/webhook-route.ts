/**
 * POST /api/github/webhooks, without Probot's webhook middleware. Intake only needs the
 * delivery's name, id and payload; Probot would also build a Context with an authenticated
 * Octokit for every event, which is most of the CPU a delivery costs. Here a delivery costs one
 * HMAC check, one JSON.parse and the inbox write — GitHub gets its answer in milliseconds even in
 * a burst. (A development webhook proxy forwards here too: see PROBOT_WEBHOOK_PATH in app.ts.)
 *
 * Until its signature is checked a body is anybody's, so what an unsigned sender can make the
 * process hold is bounded three ways: a body over the cap is refused before it is read (by its
 * Content-Length) or cut off when it passes the cap (a chunked body); the bodies being read at
 * once are bounded in number and in bytes, and past that a request is refused before it is
 * read; and a body must arrive within a deadline. Node's own header and request timeouts
 * (limitSlowClients in http.ts) cover the headers.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../log.js";
import type { WebhookDelivery, Taken } from "../intake/webhook.js";
import type { WebhookRefusal } from "../metrics.js";
import { pathOf, sendJson, type Handler } from "./http.js";

export const WEBHOOK_PATH = "/api/github/webhooks";

/**
 * The default cap on a delivery's body (TETHER_WEBHOOK_MAX_BYTES): 2 MiB, fitted to the
 * largest payloads of the events Tether takes. The sizing is in docs/how-a-turn-runs.md ("The
 * webhook endpoint").
 */
export const DEFAULT_WEBHOOK_MAX_BYTES = 2 * 1024 * 1024;

export interface WebhookLimits {
  /** Largest body read (TETHER_WEBHOOK_MAX_BYTES). */
  maxBodyBytes: number;
  /** Bodies read at once before their signature is checked; past it, 503. */
  maxUnverifiedBodies: number;
  /**
   * Bytes those bodies may claim at once (each its Content-Length, or the cap when it has
   * none); past it, 503. At least one body of the cap always fits.
   */
  maxUnverifiedBytes: number;
  /**
   * From the end of the headers to the end of the body. GitHub sends a body in one go and
   * gives up on an answer after 10 s (github.com; 30 s on GitHub Enterprise Server), so a body
   * still arriving after that is no delivery GitHub waits for.
   */
  bodyTimeoutMs: number;
}

export const DEFAULT_WEBHOOK_LIMITS: WebhookLimits = {
  maxBodyBytes: DEFAULT_WEBHOOK_MAX_BYTES,
  // A burst from GitHub is tens of deliveries of 10-30 KB each; bench/intake.ts sends 200 at once.
  maxUnverifiedBodies: 256,
  maxUnverifiedBytes: 16 * 1024 * 1024,
  bodyTimeoutMs: 10_000,
};

/**
 * Asked of a refused sender. GitHub ignores it and never redelivers on its own; Tether's
 * redelivery sweeper (src/intake/redelivery-sweeper.ts) asks GitHub to, minutes later.
 */
const RETRY_AFTER_S = 10;

export function webhookRoute(opts: {
  secret: string;
  take: (delivery: WebhookDelivery) => Promise<Taken>;
  log: Logger;
  path?: string;
  limits?: Partial<WebhookLimits>;
  /** Counts refused requests (tether_webhook_refused_total). */
  refused?: (reason: WebhookRefusal) => void;
  /** Where the bodies being read are counted; made from `limits` unless given (tests watch it). */
  budget?: UnverifiedBudget;
}): Handler {
  const path = opts.path ?? WEBHOOK_PATH;
  const limits = { ...DEFAULT_WEBHOOK_LIMITS, ...opts.limits };
  const budget =
    opts.budget ??
    new UnverifiedBudget(
      limits.maxUnverifiedBodies,
      Math.max(limits.maxUnverifiedBytes, limits.maxBodyBytes),
    );
  const refuse = (
    res: ServerResponse,
    reason: WebhookRefusal,
    status: number,
    error: string,
    headers: Record<string, string> = {},
  ): true => {
    opts.refused?.(reason);
    // The rest of the body is never read: Node closes the connection once this is sent.
    return sendJson(res, status, { error }, { connection: "close", ...headers });
  };

  return async (req, res) => {
    if (pathOf(req) !== path) return false;
    if (req.method !== "POST") {
      return sendJson(res, 405, { error: "POST only" }, { allow: "POST", connection: "close" });
    }
    const name = header(req, "x-github-event");
    const id = header(req, "x-github-delivery");
    const signature = header(req, "x-hub-signature-256");
    if (!name || !id || !signature) {
      return refuse(
        res,
        "bad_request",
        400,
        "missing x-github-event, x-github-delivery or x-hub-signature-256",
      );
    }
    const declared = contentLength(req);
    if (declared !== undefined && declared > limits.maxBodyBytes) {
      return refuse(
        res,
        "too_large",
        413,
        `body of ${declared} bytes is over the ${limits.maxBodyBytes}-byte cap (TETHER_WEBHOOK_MAX_BYTES)`,
      );
    }
    const claim = declared ?? limits.maxBodyBytes;
    if (!budget.take(claim)) {
      opts.log.warn(
        { delivery: id, event: name, reading: budget.bodies, bytes: budget.bytes },
        "webhook refused: too many unverified bodies in flight",
      );
      return refuse(
        res,
        "busy",
        503,
        "too many deliveries are being read at once; redeliver this one",
        { "retry-after": String(RETRY_AFTER_S) },
      );
    }
    let read: BodyRead;
    try {
      read = await readBody(req, opts.secret, limits);
    } finally {
      budget.give(claim);
    }
    if (read.kind === "aborted") return true; // nobody left to answer
    if (read.kind === "too_large") {
      return refuse(
        res,
        "too_large",
        413,
        `body is over the ${limits.maxBodyBytes}-byte cap (TETHER_WEBHOOK_MAX_BYTES)`,
      );
    }
    if (read.kind === "timeout") {
      opts.log.warn(
        { delivery: id, event: name, received: read.received },
        "webhook body did not arrive in time; connection closed",
      );
      return refuse(
        res,
        "timeout",
        408,
        `the body did not arrive within ${limits.bodyTimeoutMs / 1000} s`,
      );
    }
    // The signature is checked before the payload is parsed, or even joined into one buffer.
    if (!digestMatches(read.digest, signature)) {
      opts.log.warn({ delivery: id, event: name }, "webhook signature does not match; refused");
      // 400, as Octokit's and Probot's middleware answer: a 401 would have to carry a
      // WWW-Authenticate challenge (RFC 9110), and no HTTP auth scheme covers this signature.
      return refuse(res, "bad_signature", 400, "signature does not match");
    }
    const body = Buffer.concat(read.chunks, read.size);
    let payload: unknown;
    try {
      payload = JSON.parse(body.toString("utf8"));
    } catch {
      return sendJson(res, 400, { error: "body is not JSON" });
    }
    try {
      const taken = await opts.take({ id, name, payload });
      return sendJson(res, 200, taken.taken ? { ok: true } : { ok: true, ignored: taken.reason });
    } catch (err) {
      // Not kept: a 5xx lets GitHub show the delivery as failed so it can be redelivered.
      opts.log.error({ err, delivery: id, event: name }, "webhook could not be kept");
      return sendJson(res, 500, { error: "could not keep the delivery; redeliver it" });
    }
  };
}

export function signatureMatches(secret: string, body: Buffer, signature: string): boolean {
  return digestMatches(createHmac("sha256", secret).update(body).digest(), signature);
}

function digestMatches(digest: Buffer, signature: string): boolean {
  const expected = Buffer.from(`sha256=${digest.toString("hex")}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/** The declared body length; undefined for a chunked body (Node's parser vouches for the digits). */
function contentLength(req: IncomingMessage): number | undefined {
  const v = req.headers["content-length"];
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/**
 * What the unverified bodies being read may hold. Each request claims its Content-Length (the
 * cap when it has none) before a byte is read, so a sender that declares a large body counts
 * in full from the start, however slowly it sends.
 */
export class UnverifiedBudget {
  bodies = 0;
  bytes = 0;
  constructor(
    private readonly maxBodies: number,
    private readonly maxBytes: number,
  ) {}

  take(bytes: number): boolean {
    if (this.bodies + 1 > this.maxBodies || this.bytes + bytes > this.maxBytes) return false;
    this.bodies++;
    this.bytes += bytes;
    return true;
  }

  give(bytes: number): void {
    this.bodies--;
    this.bytes -= bytes;
  }
}

type BodyRead =
  | { kind: "read"; chunks: Buffer[]; size: number; digest: Buffer }
  | { kind: "too_large" }
  | { kind: "timeout"; received: number }
  | { kind: "aborted" };

/**
 * Reads the body, hashing it as it streams, until its end, the cap, the deadline or the client
 * going away, whichever comes first. After the first three the request stops being read: what
 * arrives later is dropped, and the caller's answer closes the connection.
 */
function readBody(
  req: IncomingMessage,
  secret: string,
  limits: Pick<WebhookLimits, "maxBodyBytes" | "bodyTimeoutMs">,
): Promise<BodyRead> {
  return new Promise((resolve) => {
    const hmac = createHmac("sha256", secret);
    let chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: BodyRead) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (result.kind !== "read") chunks = [];
      resolve(result);
    };
    const timer = setTimeout(
      () => finish({ kind: "timeout", received: size }),
      limits.bodyTimeoutMs,
    );
    req.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limits.maxBodyBytes) return finish({ kind: "too_large" });
      hmac.update(chunk);
      chunks.push(chunk);
    });
    req.on("end", () => finish({ kind: "read", chunks, size, digest: hmac.digest() }));
    req.on("error", () => finish({ kind: "aborted" }));
    req.on("close", () => {
      if (!req.complete) finish({ kind: "aborted" });
    });
  });
}
