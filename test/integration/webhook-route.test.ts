/**
 * The webhook route's limits over real HTTP, in process, with small limits so each one is
 * reached with a few bytes: the cap, the bound on unverified bodies in flight (and that every
 * way a read ends gives its share back), the body deadline.
 */
import { createHmac } from "node:crypto";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { WebhookDelivery } from "../../src/intake/webhook.js";
import { createLogger } from "../../src/log.js";
import type { WebhookRefusal } from "../../src/metrics.js";
import { serveHandlers, type Served } from "../../src/web/http.js";
import {
  DEFAULT_WEBHOOK_LIMITS,
  UnverifiedBudget,
  webhookRoute,
  type WebhookLimits,
} from "../../src/web/webhook-route.js";

const SECRET = "route-test-secret";
const log = createLogger("silent");
let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

async function serve(limits: Partial<WebhookLimits>) {
  const taken: WebhookDelivery[] = [];
  const refused: WebhookRefusal[] = [];
  const all = { ...DEFAULT_WEBHOOK_LIMITS, ...limits };
  const budget = new UnverifiedBudget(all.maxUnverifiedBodies, all.maxUnverifiedBytes);
  served = await serveHandlers([
    webhookRoute({
      secret: SECRET,
      log,
      limits,
      budget,
      take: async (d) => {
        taken.push(d);
        return { taken: true } as never;
      },
      refused: (r) => refused.push(r),
    }),
  ]);
  /** Resolves once the route counts this many bodies (and bytes) being read. */
  const reading = async (bodies: number, bytes?: number) => {
    while (budget.bodies !== bodies || (bytes !== undefined && budget.bytes !== bytes)) {
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { port: Number(new URL(served.url).port), taken, refused, reading };
}

const sign = (body: string) => `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`;

function head(extra: string, signature = `sha256=${"0".repeat(64)}`): string {
  return (
    "POST /api/github/webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
    "X-GitHub-Event: issues\r\nX-GitHub-Delivery: d-1\r\n" +
    `X-Hub-Signature-256: ${signature}\r\n${extra}\r\n`
  );
}

/** A raw connection: write what you like, read the status line when the server closes. */
function open(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  let answer = "";
  socket.on("data", (d) => (answer += d.toString("latin1")));
  socket.on("error", () => {});
  const closed = new Promise<string>((resolve) =>
    socket.on("close", () => resolve(answer.split("\r\n")[0] ?? "")),
  );
  const connected = new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  return {
    write: async (text: string) => {
      await connected;
      socket.write(text);
    },
    end: () => socket.end(),
    destroy: () => socket.destroy(),
    /** The status line once the server has closed the connection. */
    closed,
    /** Whatever has arrived so far. */
    answer: () => answer,
  };
}

/** Waits until the server has answered on `c` (or the test times out). */
async function answered(c: ReturnType<typeof open>): Promise<string> {
  while (!c.answer()) await new Promise((r) => setTimeout(r, 10));
  return c.answer().split("\r\n")[0]!;
}

describe("the webhook route's limits", () => {
  it("takes a signed delivery and refuses a forged one without handing it on", async () => {
    const s = await serve({});
    const body = JSON.stringify({ action: "opened" });
    const ok = open(s.port);
    await ok.write(head(`Content-Length: ${body.length}\r\n`, sign(body)) + body);
    expect(await answered(ok)).toBe("HTTP/1.1 200 OK");
    ok.end();
    expect(s.taken).toEqual([{ id: "d-1", name: "issues", payload: { action: "opened" } }]);
    const forged = open(s.port);
    await forged.write(head(`Content-Length: ${body.length}\r\n`) + body);
    expect(await forged.closed).toBe("HTTP/1.1 400 Bad Request");
    expect(s.taken).toHaveLength(1);
    expect(s.refused).toEqual(["bad_signature"]);
  });

  it("a declared body over the cap: 413 before the body, connection closed", async () => {
    const s = await serve({ maxBodyBytes: 100 });
    const c = open(s.port);
    await c.write(head("Content-Length: 101\r\n"));
    expect(await c.closed).toBe("HTTP/1.1 413 Payload Too Large");
    expect(s.refused).toEqual(["too_large"]);
  });

  it("a chunked body: cut at the cap with 413", async () => {
    const s = await serve({ maxBodyBytes: 100 });
    const c = open(s.port);
    await c.write(head("Transfer-Encoding: chunked\r\n"));
    await c.write(`3c\r\n${"a".repeat(60)}\r\n`);
    await c.write(`3c\r\n${"a".repeat(60)}\r\n`);
    expect(await c.closed).toBe("HTTP/1.1 413 Payload Too Large");
  });

  it("past the bound on bodies in flight: 503 with Retry-After at once; the bound frees as reads end", async () => {
    const s = await serve({ maxUnverifiedBodies: 2, bodyTimeoutMs: 60_000 });
    const a = open(s.port);
    const b = open(s.port);
    await a.write(head("Content-Length: 10\r\n") + "01234");
    await b.write(head("Content-Length: 10\r\n") + "01234");
    await s.reading(2); // both are being read
    const c = open(s.port);
    await c.write(head("Content-Length: 10\r\n"));
    expect(await c.closed).toBe("HTTP/1.1 503 Service Unavailable");
    expect(c.answer()).toMatch(/\r\nretry-after: 10\r\n/i);
    // One finishes (a forged body: 400), one goes away mid-body: both give their place back.
    await a.write("56789");
    expect(await a.closed).toBe("HTTP/1.1 400 Bad Request");
    b.destroy();
    await b.closed;
    await s.reading(0);
    for (let i = 0; i < 2; i++) {
      const d = open(s.port);
      await d.write(head("Content-Length: 3\r\n") + "abc");
      expect(await d.closed).toBe("HTTP/1.1 400 Bad Request");
    }
    expect(s.refused).toEqual(["busy", "bad_signature", "bad_signature", "bad_signature"]);
  });

  it("the bytes bound counts what each declares; a chunked body claims the whole cap", async () => {
    const s = await serve({ maxBodyBytes: 600, maxUnverifiedBytes: 1000, bodyTimeoutMs: 60_000 });
    const big = open(s.port);
    await big.write(head("Content-Length: 600\r\n") + "x");
    await s.reading(1, 600);
    const tooMuch = open(s.port);
    await tooMuch.write(head("Content-Length: 401\r\n"));
    expect(await tooMuch.closed).toBe("HTTP/1.1 503 Service Unavailable");
    const chunked = open(s.port);
    await chunked.write(head("Transfer-Encoding: chunked\r\n"));
    expect(await chunked.closed).toBe("HTTP/1.1 503 Service Unavailable");
    const fits = open(s.port);
    await fits.write(head("Content-Length: 400\r\n") + "y".repeat(400));
    expect(await fits.closed).toBe("HTTP/1.1 400 Bad Request");
    big.destroy();
  });

  it("a body that stops coming: 408 after the deadline, connection closed, place given back", async () => {
    const s = await serve({ maxUnverifiedBodies: 1, bodyTimeoutMs: 300 });
    const slow = open(s.port);
    const t0 = Date.now();
    await slow.write(head("Content-Length: 10\r\n") + "0123");
    expect(await slow.closed).toBe("HTTP/1.1 408 Request Timeout");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    await s.reading(0);
    const next = open(s.port);
    await next.write(head("Content-Length: 3\r\n") + "abc");
    expect(await next.closed).toBe("HTTP/1.1 400 Bad Request");
    expect(s.refused).toEqual(["timeout", "bad_signature"]);
  });

  it("missing GitHub headers: 400 without reading the body", async () => {
    const s = await serve({});
    const c = open(s.port);
    await c.write(
      "POST /api/github/webhooks HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
    );
    expect(await c.closed).toBe("HTTP/1.1 400 Bad Request");
    expect(s.refused).toEqual(["bad_request"]);
  });
});
