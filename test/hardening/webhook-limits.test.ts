/**
 * Drill: what an unsigned sender can make the webhook endpoint hold, against the built app (web
 * role) over real TCP. A body over the cap is refused before it is read; 50 slow unsigned
 * senders, each trickling a body just under the cap, leave the process's memory flat (the
 * figures are printed so they can be quoted); senders too slow with their headers are cut.
 */
import fs from "node:fs";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_WEBHOOK_LIMITS, DEFAULT_WEBHOOK_MAX_BYTES } from "../../src/web/webhook-route.js";
import { HEADERS_TIMEOUT_MS } from "../../src/web/http.js";
import { createTestDatabase } from "../helpers/db.js";
import { REPO, SECRET, startStack, type Stack } from "../helpers/e2e-stack.js";
import { signedWebhook } from "../helpers/fake-github.js";
import { sleep } from "./helpers/drill.js";

const MiB = 1024 * 1024;
const SENDERS = 50;
/** Each slow sender declares a body just under the cap, so only the in-flight bound stops it. */
const DECLARED = DEFAULT_WEBHOOK_MAX_BYTES - 1024;
/** ... sends all of it but the last 64 KiB at once, then trickles a byte every half second. */
const SENT_AT_ONCE = DECLARED - 64 * 1024;

const db = await createTestDatabase();
let stack: Stack;
let port: number;

beforeAll(async () => {
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    env: { TETHER_ROLE: "web", LOG_LEVEL: "warn" },
  });
  port = Number(new URL(stack.app.url).port);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

/** Unsigned GitHub-looking headers: the signature is wrong, as an attacker's would be. */
function headers(extra: string): string {
  return (
    "POST /api/github/webhooks HTTP/1.1\r\n" +
    "Host: 127.0.0.1\r\n" +
    "Content-Type: application/json\r\n" +
    "X-GitHub-Event: issue_comment\r\n" +
    `X-GitHub-Delivery: slow-${Math.random().toString(36).slice(2)}\r\n` +
    `X-Hub-Signature-256: sha256=${"0".repeat(64)}\r\n` +
    extra +
    "\r\n"
  );
}

interface Outcome {
  /** The answer's status line, or "" when the connection closed without one. */
  status: string;
  retryAfter: string | undefined;
  /** From connect to close. */
  ms: number;
  /** Body bytes the client managed to hand to the socket. */
  sent: number;
  /** Whether an answer arrived while the client had written only the headers. */
  answeredBeforeBody: boolean;
}

/**
 * A raw HTTP/1.1 client: writes the headers, then `body` (called with a write function until
 * the connection closes), and records what came back.
 */
function rawRequest(
  head: string,
  body: (write: (b: Buffer | string) => boolean, closed: () => boolean) => Promise<void>,
): Promise<Outcome> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    let answer = "";
    let sent = 0;
    let closed = false;
    let answeredBeforeBody = false;
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(head);
      void body(
        (b) => {
          if (closed || socket.destroyed) return false;
          sent += Buffer.byteLength(b);
          return socket.write(b);
        },
        () => closed,
      );
    });
    socket.on("data", (d) => {
      if (!answer && sent === 0) answeredBeforeBody = true;
      answer += d.toString("latin1");
    });
    socket.on("error", () => {}); // EPIPE/ECONNRESET when the server stops reading: expected
    socket.on("close", () => {
      closed = true;
      const [statusLine = ""] = answer.split("\r\n");
      resolve({
        status: statusLine.replace(/^HTTP\/1\.1 /, ""),
        retryAfter: /\r\nretry-after: *(\S+)/i.exec(answer)?.[1],
        ms: Date.now() - t0,
        sent,
        answeredBeforeBody,
      });
    });
  });
}

async function memory(): Promise<{ rss: number; heap: number; external: number }> {
  const status = fs.readFileSync(`/proc/${stack.app.child.pid}/status`, "utf8");
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
  const text = await (await fetch(`${stack.app.url}/metrics`)).text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)![1]);
  return {
    rss,
    heap: metric("nodejs_heap_size_used_bytes"),
    external: metric("nodejs_external_memory_bytes"),
  };
}

const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;

async function refusedCounts(): Promise<Record<string, number>> {
  const text = await (await fetch(`${stack.app.url}/metrics`)).text();
  return Object.fromEntries(
    [...text.matchAll(/^tether_webhook_refused_total\{reason="(\w+)"\} (\d+)$/gm)].map((m) => [
      m[1]!,
      Number(m[2]),
    ]),
  );
}

/** A real delivery, signed, still goes through. */
async function signedDeliveryWorks(): Promise<void> {
  const issue = stack.gh.addIssue({ repo: REPO, title: "still here", body: "", user: "alice" });
  const c = stack.gh.addComment({
    repo: REPO,
    issueNumber: issue.number as number,
    body: "@tether are you still there?",
    user: "alice",
  });
  const ev = stack.gh.webhooks.issueComment({
    repo: REPO,
    issueNumber: issue.number as number,
    commentId: c.id as number,
  });
  const res = await signedWebhook(stack.app.url, ev.name, ev.payload, SECRET);
  expect(res.status, res.body).toBe(200);
}

describe("the webhook endpoint under unsigned senders", () => {
  it("a Content-Length over the cap is answered 413 while the client has sent only its headers", async () => {
    const before = await refusedCounts();
    // The body is never sent: the client waits for the answer first, as long as it takes.
    const out = await rawRequest(headers(`Content-Length: ${25 * MiB}\r\n`), async () => {});
    expect(out.status).toBe("413 Payload Too Large");
    expect(out.answeredBeforeBody).toBe(true);
    expect(out.sent).toBe(0);
    expect((await refusedCounts()).too_large).toBe((before.too_large ?? 0) + 1);
  });

  it("a chunked body is cut off at the cap with 413", async () => {
    const chunk = Buffer.alloc(256 * 1024, "a");
    const out = await rawRequest(
      headers("Transfer-Encoding: chunked\r\n"),
      async (write, closed) => {
        // Up to twice the cap; the server stops reading at the cap.
        for (let i = 0; i < (2 * DEFAULT_WEBHOOK_MAX_BYTES) / chunk.length && !closed(); i++) {
          write(`${chunk.length.toString(16)}\r\n`);
          write(chunk);
          write("\r\n");
          await sleep(5);
        }
      },
    );
    expect(out.status).toBe("413 Payload Too Large");
  });

  it(
    `${SENDERS} slow unsigned senders, each trickling a body just under the cap, leave memory flat`,
    { timeout: 150_000 },
    async () => {
      // Warm up: the code paths of a refusal and of a delivery, so the baseline includes them.
      await signedDeliveryWorks();
      await rawRequest(headers("Content-Length: 10\r\n"), async (write) => {
        write("0123456789");
      });
      await sleep(1000);
      const before = await memory();
      const refusedBefore = await refusedCounts();

      let peak = { ...before };
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const m = await memory();
          peak = {
            rss: Math.max(peak.rss, m.rss),
            heap: Math.max(peak.heap, m.heap),
            external: Math.max(peak.external, m.external),
          };
          await sleep(250);
        }
      })();

      // Header senders: a slowloris that never finishes its headers, one more line a second.
      const slowHeaders = Array.from({ length: 5 }, () =>
        rawRequest(
          "POST /api/github/webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\n",
          async (write, closed) => {
            for (let i = 0; !closed(); i++) {
              write(`X-Slow-${i}: y\r\n`);
              await sleep(1000);
            }
          },
        ),
      );

      const chunk = Buffer.alloc(64 * 1024, "x");
      const started = Date.now();
      const bodies = await Promise.all(
        Array.from({ length: SENDERS }, () =>
          rawRequest(headers(`Content-Length: ${DECLARED}\r\n`), async (write, closed) => {
            for (let sent = 0; sent < SENT_AT_ONCE && !closed(); sent += chunk.length) {
              if (!write(chunk.subarray(0, Math.min(chunk.length, SENT_AT_ONCE - sent)))) {
                await sleep(10); // let the socket drain
              }
            }
            // The last bytes never come: one every half second, until the server gives up.
            while (!closed()) {
              write("x");
              await sleep(500);
            }
          }),
        ),
      );
      const bodiesMs = Date.now() - started;
      await sleep(2000);
      sampling = false;
      await sampler;
      const after = await memory();
      const headersCut = await Promise.all(slowHeaders);

      const tally = new Map<string, number>();
      for (const b of bodies) tally.set(b.status, (tally.get(b.status) ?? 0) + 1);
      const refused = await refusedCounts();
      const figures = {
        senders: SENDERS,
        declaredBytes: DECLARED,
        answers: Object.fromEntries(tally),
        bodiesDoneMs: bodiesMs,
        rss: { before: mib(before.rss), peak: mib(peak.rss), after: mib(after.rss) },
        heapUsed: { before: mib(before.heap), peak: mib(peak.heap), after: mib(after.heap) },
        external: {
          before: mib(before.external),
          peak: mib(peak.external),
          after: mib(after.external),
        },
        headerSendersCutAfterMs: headersCut.map((h) => h.ms),
        headerSendersAnswer: [...new Set(headersCut.map((h) => h.status))],
      };
      console.log("webhook slow senders:", JSON.stringify(figures));

      // The server's side: every sender was refused at once because the in-flight bound was
      // full (503), or admitted and cut at the body deadline (408); at most what the bound
      // holds was admitted.
      const admitted = Math.floor(DEFAULT_WEBHOOK_LIMITS.maxUnverifiedBytes / DECLARED);
      const busy = (refused.busy ?? 0) - (refusedBefore.busy ?? 0);
      const timedOut = (refused.timeout ?? 0) - (refusedBefore.timeout ?? 0);
      expect(busy + timedOut).toBe(SENDERS);
      expect(timedOut).toBeLessThanOrEqual(admitted);
      // The client's side: a 503 with Retry-After, a 408 after the deadline, or (for a sender
      // still writing when the server closed without reading its body) a reset with no answer.
      for (const b of bodies) {
        expect(["503 Service Unavailable", "408 Request Timeout", ""]).toContain(b.status);
        if (b.status.startsWith("503")) expect(b.retryAfter).toBe("10");
        if (b.status.startsWith("408")) {
          expect(b.ms).toBeGreaterThanOrEqual(DEFAULT_WEBHOOK_LIMITS.bodyTimeoutMs);
        }
      }
      expect(tally.get("503 Service Unavailable") ?? 0).toBeGreaterThan(0);

      // Memory: what the admitted bodies may hold is 16 MiB; 50 bodies read whole would be
      // ~100 MiB (and the old 25 MB cap let each hold 25 MB). A generous bound: 64 MiB.
      expect(peak.rss - before.rss).toBeLessThan(64 * MiB);
      expect(after.rss - before.rss).toBeLessThan(64 * MiB);
      expect(peak.heap + peak.external - (before.heap + before.external)).toBeLessThan(64 * MiB);

      // Header senders are cut by Node (408, connection closed), never before the headers
      // timeout and within its 30-s check.
      for (const h of headersCut) {
        expect(h.status).toBe("408 Request Timeout");
        expect(h.ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS);
        expect(h.ms).toBeLessThan(HEADERS_TIMEOUT_MS + 30_000 + 20_000);
      }

      // And the endpoint still takes GitHub's deliveries.
      await signedDeliveryWorks();
    },
  );
});
