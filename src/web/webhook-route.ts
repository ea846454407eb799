/**
 * POST /api/github/webhooks, without Probot's webhook middleware. Intake only needs the
 * delivery's name, id and payload; Probot would also build a Context with an authenticated
 * Octokit for every event, which is most of the CPU a delivery costs. Here a delivery costs one
 * HMAC check, one JSON.parse and the inbox write — GitHub gets its answer in milliseconds even in
 * a burst. (Deliveries forwarded by a webhook proxy in development still go through Probot at
 * its own path; both end in the same takeDelivery.)
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Logger } from "../log.js";
import type { WebhookDelivery, Taken } from "../intake/webhook.js";
import { pathOf, sendJson, type Handler } from "./http.js";

export const WEBHOOK_PATH = "/api/github/webhooks";
/** GitHub caps payloads at 25 MB. */
const MAX_BODY = 25 * 1024 * 1024;

export function webhookRoute(opts: {
  secret: string;
  take: (delivery: WebhookDelivery) => Promise<Taken>;
  log: Logger;
  path?: string;
}): Handler {
  const path = opts.path ?? WEBHOOK_PATH;
  return async (req, res) => {
    if (pathOf(req) !== path) return false;
    if (req.method !== "POST") return sendJson(res, 405, { error: "POST only" });
    const name = header(req, "x-github-event");
    const id = header(req, "x-github-delivery");
    const signature = header(req, "x-hub-signature-256");
    if (!name || !id || !signature) {
      req.resume();
      return sendJson(res, 400, {
        error: "missing x-github-event, x-github-delivery or x-hub-signature-256",
      });
    }
    let body: Buffer;
    try {
      body = await readBody(req, MAX_BODY);
    } catch (err) {
      return sendJson(res, 413, { error: (err as Error).message });
    }
    // The signature is checked before the payload is parsed: an unsigned body is never read.
    if (!signatureMatches(opts.secret, body, signature)) {
      opts.log.warn({ delivery: id, event: name }, "webhook signature does not match; refused");
      return sendJson(res, 401, { error: "signature does not match" });
    }
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
  const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(body).digest("hex")}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        reject(new Error(`body over ${max} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}
