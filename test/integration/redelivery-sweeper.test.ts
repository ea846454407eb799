/**
 * The redelivery sweeper on real Postgres against the GitHub stand-in: the app's delivery log
 * is listed and redeliveries asked for with the app's JWT, as in production, and the stand-in
 * sends each redelivery to a webhook endpoint of this test's own, which checks its signature.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { Probot } from "probot";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appOctokit } from "../../src/github/app-auth.js";
import { githubDeliveryLog, type DeliveryLog } from "../../src/github/webhook-deliveries.js";
import {
  REDELIVER_SETTLE_MS,
  RedeliverySweeper,
  type RedeliverySweeperOptions,
} from "../../src/intake/redelivery-sweeper.js";
import { createLogger } from "../../src/log.js";
import { Metrics } from "../../src/metrics.js";
import { deliveriesInInbox, insertDelivery } from "../../src/sql/deliveries.js";
import { readRedeliveryMark } from "../../src/sql/redelivery.js";
import { signatureMatches } from "../../src/web/webhook-route.js";
import { createTestDatabase } from "../helpers/db.js";
import { startFakeGitHub, type FakeGitHub } from "../helpers/fake-github.js";

const db = await createTestDatabase();
const SECRET = "redeliver-test-secret";
const MIN = 60_000;
const HOUR = 60 * MIN;

/** A webhook endpoint that records what reaches it and answers 200 to a good signature. */
interface Endpoint {
  url: string;
  received: Array<{ guid: string; event: string; signed: boolean }>;
  close(): Promise<void>;
}

async function startEndpoint(): Promise<Endpoint> {
  const received: Endpoint["received"] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const signed = signatureMatches(
        SECRET,
        Buffer.concat(chunks),
        String(req.headers["x-hub-signature-256"]),
      );
      received.push({
        guid: String(req.headers["x-github-delivery"]),
        event: String(req.headers["x-github-event"]),
        signed,
      });
      res.writeHead(signed ? 200 : 400, { "content-type": "application/json" });
      res.end(signed ? '{"ok":true}' : '{"error":"signature does not match"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/github/webhooks`,
    received,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let gh: FakeGitHub;
let endpoint: Endpoint;
let lines: Array<Record<string, unknown>>;

beforeEach(async () => {
  await db.pool.query("TRUNCATE webhook_deliveries, webhook_redelivery_mark");
  gh = await startFakeGitHub();
  endpoint = await startEndpoint();
  lines = [];
});
afterEach(async () => {
  await gh.deliveryLog.settled();
  await endpoint.close();
  await gh.close();
});

/** The app's delivery log through a JWT client, as main.ts makes it. */
async function appDeliveryLog(): Promise<DeliveryLog> {
  const probot = new Probot({
    appId: gh.appId,
    privateKey: gh.privateKeyPem,
    baseUrl: gh.apiUrl,
    Octokit: appOctokit({ TETHER_GITHUB_THROTTLE: false }),
  });
  return githubDeliveryLog(await probot.auth());
}

function sweeper(over: Partial<RedeliverySweeperOptions> = {}): RedeliverySweeper {
  return new RedeliverySweeper({
    pool: db.pool,
    log: createLogger("debug", { write: (l: string) => void lines.push(JSON.parse(l)) }),
    github: appDeliveryLog,
    ...over,
  });
}

/** A failed (or answered) attempt `minutesAgo`, of a delivery the stand-in can redeliver. */
function failed(statusCode: number, minutesAgo: number, guid?: string) {
  return gh.deliveryLog.record({
    ...(guid ? { guid } : {}),
    statusCode,
    at: new Date(Date.now() - minutesAgo * MIN),
    url: endpoint.url,
    payload: { action: "created", comment: { body: "@tether hi" } },
    secret: SECRET,
  });
}

const listings = () => gh.requests.filter((r) => r.route === "GET /app/hook/deliveries");
const redeliveryRequests = () =>
  gh.requests.filter((r) => r.route === "POST /app/hook/deliveries/{delivery_id}/attempts");

async function inboxRow(guid: string): Promise<void> {
  await insertDelivery(db.pool, {
    deliveryId: guid,
    event: "issue_comment",
    action: "created",
    installationId: 1,
    dedupeKey: `comment:${guid}:created`,
    payloadJson: "{}",
  });
}

describe("RedeliverySweeper.sweep", () => {
  it("redelivers what failed for a reason that passes, with the app's JWT, and leaves the rest", async () => {
    const down = failed(500, 11); // the database away
    const refused = failed(0, 10); // nothing listening
    const fine = failed(200, 9);
    const tooLarge = failed(413, 8);
    const young = failed(503, 0.5); // GitHub may still be on it
    const kept = failed(500, 7); // in the inbox: only the answer was lost
    await inboxRow(kept.guid);
    const metrics = new Metrics();

    const before = Date.now();
    const s = await sweeper({ redelivered: (r) => metrics.recordRedelivery(r) }).sweep();
    expect(s).toBeDefined();
    expect(s!.redelivered).toEqual([down.guid, refused.guid]);
    expect(s!.failed).toEqual([]);
    expect(s!.left).toEqual({ delivered: 1, in_inbox: 1, settling: 1, permanent: 1, gave_up: 0 });
    expect(s!.truncated).toBe(false);

    // The app's JWT on both routes (the stand-in answers 401 to anything else).
    expect(listings().map((r) => r.status)).toEqual([200]);
    expect(redeliveryRequests().map((r) => [r.path, r.status])).toEqual([
      [`/api/v3/app/hook/deliveries/${down.id}/attempts`, 202],
      [`/api/v3/app/hook/deliveries/${refused.id}/attempts`, 202],
    ]);
    for (const r of [...listings(), ...redeliveryRequests()])
      expect(r.headers.authorization).toMatch(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/i);

    // GitHub sent them again: same delivery id, signed, recorded as redeliveries.
    await gh.deliveryLog.settled();
    expect(endpoint.received).toEqual(
      expect.arrayContaining([
        { guid: down.guid, event: "issue_comment", signed: true },
        { guid: refused.guid, event: "issue_comment", signed: true },
      ]),
    );
    expect(endpoint.received).toHaveLength(2);
    for (const left of [fine, tooLarge, young, kept])
      expect(gh.deliveryLog.of(left.guid)).toHaveLength(1);
    for (const g of [down.guid, refused.guid]) {
      expect(gh.deliveryLog.of(g).map((a) => [a.redelivery, a.statusCode])).toEqual([
        [false, g === down.guid ? 500 : 0],
        [true, 200],
      ]);
    }

    const mark = await readRedeliveryMark(db.pool);
    expect(mark!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(mark!.getTime()).toBeLessThanOrEqual(Date.now());
    expect(await metrics.render()).toMatch(
      /^tether_webhook_redeliveries_total\{result="requested"\} 2$/m,
    );
    expect(
      lines.find((l) => l.msg === "asked GitHub to redeliver webhook deliveries that failed"),
    ).toMatchObject({ level: "info", redelivered: 2, failed: 0 });

    // The next sweep finds them delivered.
    const again = await sweeper().sweep();
    expect(again!.redelivered).toEqual([]);
    expect(again!.left.delivered).toBe(3);
    expect(lines.at(-1)).toMatchObject({
      level: "debug",
      msg: "no failed webhook deliveries to redeliver",
    });
  });

  it("gives a delivery four attempts in all, counting an operator's and its own", async () => {
    const guid = "5a1c0de0-0000-4000-8000-000000000001";
    failed(500, 40, guid);
    failed(502, 30, guid).redelivery = true;
    failed(0, 20, guid).redelivery = true;
    const s1 = await sweeper().sweep();
    expect(s1!.redelivered).toEqual([guid]);
    await gh.deliveryLog.settled();
    expect(gh.deliveryLog.of(guid)).toHaveLength(4);

    const hopeless = "5a1c0de0-0000-4000-8000-000000000002";
    // Within the shortest window (27 minutes by default): Tether's own come a sweep apart.
    for (const m of [20, 15, 10, 5]) failed(500, m, hopeless);
    const s2 = await sweeper().sweep();
    expect(s2!.redelivered).toEqual([]);
    expect(s2!.left.gave_up).toBe(1);
  });

  it("looks back to where the last sweep began (less the settle delay), the first time 24 hours", async () => {
    const tooOld = failed(500, 30 * 60); // before the first sweep's lookback
    const dayOld = failed(500, 20 * 60);
    const t0 = Date.now();
    const first = await sweeper().sweep();
    expect(first!.since.getTime()).toBeGreaterThanOrEqual(t0 - 24 * HOUR);
    expect(first!.since.getTime()).toBeLessThanOrEqual(Date.now() - 24 * HOUR);
    expect(first!.redelivered).toEqual([dayOld.guid]);
    expect(first!.redelivered).not.toContain(tooOld.guid);

    // The process was down for three hours since its last sweep.
    await db.pool.query(
      "UPDATE webhook_redelivery_mark SET swept_from = now() - interval '3 hours'",
    );
    const duringOutage = failed(503, 2.5 * 60);
    const beforeIt = failed(503, 4 * 60);
    const back = await sweeper().sweep();
    expect(Date.now() - back!.since.getTime()).toBeGreaterThanOrEqual(
      3 * HOUR + REDELIVER_SETTLE_MS,
    );
    expect(Date.now() - back!.since.getTime()).toBeLessThan(3.5 * HOUR);
    expect(back!.redelivered).toEqual([duringOutage.guid]);
    expect(back!.redelivered).not.toContain(beforeIt.guid);

    // The mark moved to this sweep's start: the next one looks back its shortest window only.
    const mark = await readRedeliveryMark(db.pool);
    expect(Date.now() - mark!.getTime()).toBeLessThan(5 * MIN);
    const next = await sweeper().sweep();
    expect(Date.now() - next!.since.getTime()).toBeLessThan(HOUR);
  });

  it("walks at most maxPages pages, says so, and stops at `since` when it comes first", async () => {
    // 250 answered deliveries in the last hour, newest first: 3 pages of 100.
    for (let i = 0; i < 250; i++) failed(200, 60 - i * 0.2);
    const hidden = failed(500, 70); // behind all of them
    const s = await sweeper({ maxPages: 2 }).sweep();
    expect(s!.pages).toBe(2);
    expect(s!.truncated).toBe(true);
    expect(s!.attempts).toBe(200);
    expect(s!.redelivered).toEqual([]);
    expect(listings().map((r) => r.query.cursor)).toEqual([undefined, expect.any(String)]);
    expect(lines.find((l) => l.level === "warn")).toMatchObject({
      msg: expect.stringContaining("walked 2 pages back, the most a sweep walks"),
      pages: 2,
    });

    // Unbounded, the walk reaches it (and a fourth page is not asked for: the log ends). The
    // mark is taken away so that this sweep looks back as far as the first did.
    await db.pool.query("TRUNCATE webhook_redelivery_mark");
    const all = await sweeper().sweep();
    expect(all!.truncated).toBe(false);
    expect(all!.pages).toBe(3);
    expect(all!.redelivered).toEqual([hidden.guid]);

    // A walk that reaches `since` stops there: the first page goes past the shortest window.
    await db.pool.query("UPDATE webhook_redelivery_mark SET swept_from = now()");
    const n = listings().length;
    const short = await sweeper().sweep();
    expect(short!.pages).toBe(1);
    expect(listings().length).toBe(n + 1);
  });

  it("one replica at a time: while another holds the lock nothing is listed; of two sweeps started together one works", async () => {
    const f = failed(500, 10);
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query(`SELECT pg_advisory_lock(hashtext('tether:redeliver-webhooks'))`);
      expect(await sweeper().sweep()).toBeUndefined();
      expect(listings()).toHaveLength(0);
      await other.query(`SELECT pg_advisory_unlock(hashtext('tether:redeliver-webhooks'))`);
    } finally {
      await other.end();
    }

    // The first sweep holds the lock until it is let go; the second one tries meanwhile.
    let letGo!: () => void;
    const gate = new Promise<void>((r) => (letGo = r));
    const slow = sweeper({
      github: async () => {
        await gate;
        return appDeliveryLog();
      },
    });
    const first = slow.sweep();
    await waitFor(async () => {
      const { rows } = await db.pool.query(
        `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      return rows.length > 0;
    });
    expect(await sweeper().sweep()).toBeUndefined();
    letGo();
    expect((await first)!.redelivered).toEqual([f.guid]);
    await gh.deliveryLog.settled();
    expect(redeliveryRequests()).toHaveLength(1);
    expect(gh.deliveryLog.of(f.guid).filter((a) => a.redelivery)).toHaveLength(1);
  });

  it("a redelivery GitHub refuses is logged; the others go on, and the next sweep tries it again", async () => {
    const a = failed(500, 12);
    const b = failed(500, 11);
    const c = failed(500, 10);
    gh.failNext((r) => r.path === `/api/v3/app/hook/deliveries/${b.id}/attempts`, {
      status: 422,
      body: {
        message: "Validation Failed",
        documentation_url: "https://docs.github.com/rest/apps/webhooks",
      },
    });
    const metrics = new Metrics();
    const s = await sweeper({ redelivered: (r) => metrics.recordRedelivery(r) }).sweep();
    expect(s!.redelivered).toEqual([a.guid, c.guid]);
    expect(s!.failed).toEqual([b.guid]);
    expect(lines.find((l) => l.level === "warn")).toMatchObject({
      msg: "GitHub did not take a redelivery; the next sweep tries again",
      delivery: b.guid,
    });
    expect(await metrics.render()).toMatch(
      /^tether_webhook_redeliveries_total\{result="failed"\} 1$/m,
    );
    // The mark stays where it was, so the next sweep looks back as far again.
    expect(await readRedeliveryMark(db.pool)).toBeUndefined();

    await gh.deliveryLog.settled();
    const next = await sweeper().sweep();
    expect(next!.redelivered).toEqual([b.guid]);
    expect(await readRedeliveryMark(db.pool)).toBeDefined();
    await gh.deliveryLog.settled();
    expect(endpoint.received.map((r) => r.guid).sort()).toEqual([a.guid, b.guid, c.guid].sort());
  });

  it("a sweep that cannot reach GitHub is logged and reported as nothing done", async () => {
    const s = sweeper({ github: () => Promise.reject(new Error("connect ECONNREFUSED")) });
    expect(await s.sweep()).toBeUndefined();
    expect(lines.at(-1)).toMatchObject({
      level: "warn",
      msg: "sweeping for failed webhook deliveries failed; trying again later",
    });
    expect(await readRedeliveryMark(db.pool)).toBeUndefined();
  });
});

describe("RedeliverySweeper.start", () => {
  it("sweeps after its first delay and then every interval, until stopped", async () => {
    const s = sweeper({ firstDelayMs: 0, intervalMs: 50, settleMs: 0 });
    const first = failed(0, 1);
    s.start();
    try {
      await waitFor(async () => endpoint.received.some((r) => r.guid === first.guid));
      // A later failure is found by a later sweep.
      const second = failed(503, 0);
      await waitFor(async () => endpoint.received.some((r) => r.guid === second.guid));
    } finally {
      await s.stop();
    }
  });
});

describe("deliveriesInInbox", () => {
  it("answers for many ids in one statement, whatever their status", async () => {
    await inboxRow("in-1");
    await inboxRow("in-2");
    await db.pool.query(
      "UPDATE webhook_deliveries SET status = 'failed' WHERE delivery_id = 'in-2'",
    );
    expect(await deliveriesInInbox(db.pool, ["in-1", "in-2", "out", "in-1"])).toEqual(
      new Set(["in-1", "in-2"]),
    );
    expect(await deliveriesInInbox(db.pool, [])).toEqual(new Set());
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 25));
  }
}
