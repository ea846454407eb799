import { createHmac, randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Probot, Server } from "probot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveTether, tetherApp } from "../../src/app.js";
import { freePort } from "../../src/db/embedded.js";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { readDelivery } from "../../src/sql/deliveries.js";
import { startWebhookProxy } from "../../src/web/webhook-proxy.js";
import { createTestDatabase } from "../helpers/db.js";
import { commentCreated } from "../helpers/intake-payloads.js";
import { APP_ID, TestOctokit, testPrivateKey, WEBHOOK_SECRET } from "../helpers/probot.js";

const db = await createTestDatabase();
// Both ways in: Tether's own route on its own server, as main.ts serves it, and Probot's
// middleware at the default path when the app is loaded into a Probot Server (Tether no longer
// is, but the app's event handlers still take what Probot receives).
describe.each([
  { via: "Probot's webhook middleware", own: false },
  { via: "Tether's own webhook route (as main.ts serves it)", own: true },
])("the webhook endpoint, through $via", ({ own }) => {
  const base = own ? 1800 : 800; // comment ids of their own: both blocks share a database
  let stop: () => Promise<void>;
  let url: string;

  beforeAll(async () => {
    const log = createLogger("silent");
    const env = loadEnv({ APP_ID: String(APP_ID), PRIVATE_KEY: testPrivateKey(), WEBHOOK_SECRET });
    const app = {
      appId: APP_ID,
      privateKey: testPrivateKey(),
      secret: WEBHOOK_SECRET,
      Octokit: TestOctokit,
      log,
    };
    if (own) {
      const served = await serveTether({ env, log, pool: db.pool }, new Probot(app), {
        host: "127.0.0.1",
      });
      stop = () => served.close();
      url = `${served.url}/api/github/webhooks`;
      return;
    }
    const port = await freePort();
    const server = new Server({ host: "127.0.0.1", port, log, Probot: Probot.defaults(app) });
    await server.load(tetherApp({ env, log, pool: db.pool }));
    await server.start();
    stop = () => server.stop();
    url = `http://127.0.0.1:${port}/api/github/webhooks`;
  });
  afterAll(() => stop());

  function post(body: string, opts: { id?: string; secret?: string; event?: string } = {}) {
    const signature = `sha256=${createHmac("sha256", opts.secret ?? WEBHOOK_SECRET)
      .update(body)
      .digest("hex")}`;
    return fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": opts.event ?? "issue_comment",
        "x-github-delivery": opts.id ?? randomUUID(),
        "x-hub-signature-256": signature,
      },
      body,
    });
  }

  it("answers a signed delivery with 200 once it is in the inbox", async () => {
    const id = randomUUID();
    const res = await post(
      JSON.stringify(commentCreated({ commentId: base + 1, issueNumber: 8, body: "@tether hi" })),
      { id },
    );
    expect(res.status).toBe(200);
    expect(await readDelivery(db.pool, id)).toMatchObject({
      status: "pending",
      event: "issue_comment",
      action: "created",
    });
  });

  it("refuses a delivery with a wrong signature with 400 (as Octokit does) and keeps nothing", async () => {
    const id = randomUUID();
    const res = await post(
      JSON.stringify(commentCreated({ commentId: base + 2, issueNumber: 8, body: "@tether hi" })),
      { id, secret: "wrong" },
    );
    expect(res.status).toBe(400);
    expect(await readDelivery(db.pool, id)).toBeUndefined();
  });

  it("answers 200 to a redelivery without keeping it twice", async () => {
    const id = randomUUID();
    const body = JSON.stringify(
      commentCreated({ commentId: base + 3, issueNumber: 8, body: "@tether hi" }),
    );
    expect((await post(body, { id })).status).toBe(200);
    expect((await post(body, { id })).status).toBe(200);
    const { rows } = await db.pool.query(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE dedupe_key = $1",
      [`comment:${base + 3}:created`],
    );
    expect(rows[0].n).toBe(1);
  });

  it("answers 500 when the inbox cannot keep the delivery, so GitHub shows it failed and it can be redelivered", async () => {
    await db.pool.query(
      "ALTER TABLE webhook_deliveries ADD CONSTRAINT no_more CHECK (delivery_id <> 'refused-by-db')",
    );
    try {
      const res = await post(
        JSON.stringify(commentCreated({ commentId: base + 4, issueNumber: 8, body: "@tether hi" })),
        { id: "refused-by-db" },
      );
      expect(res.status).toBe(500);
    } finally {
      await db.pool.query("ALTER TABLE webhook_deliveries DROP CONSTRAINT no_more");
    }
  });

  it("refuses a bad signature before reading the payload", async () => {
    const res = await post("this is not JSON", { id: randomUUID(), secret: "wrong" });
    expect(res.status).toBe(400);
    // Tether's route says which check failed: the signature, not the JSON.
    if (own) expect(await res.json()).toEqual({ error: "signature does not match" });
  });

  if (own)
    it("a development webhook proxy (smee.io's client, WEBHOOK_PROXY_URL) forwards a delivery to Tether's route, signature and all", async () => {
      const payload = commentCreated({ commentId: base + 5, issueNumber: 8, body: "@tether hi" });
      const body = JSON.stringify(payload);
      const id = randomUUID();
      // A smee.io channel: an event stream carrying the delivery's headers and body.
      const channel = http.createServer((req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        res.write(": connected\n\n");
        const event = {
          "x-github-event": "issue_comment",
          "x-github-delivery": id,
          "x-hub-signature-256": `sha256=${createHmac("sha256", WEBHOOK_SECRET).update(body).digest("hex")}`,
          body: payload,
          query: {},
        };
        setTimeout(() => res.write(`data: ${JSON.stringify(event)}\n\n`), 50);
      });
      await new Promise<void>((r) => channel.listen(0, "127.0.0.1", r));
      const source = `http://127.0.0.1:${(channel.address() as AddressInfo).port}/channel`;
      const proxy = await startWebhookProxy({ source, target: url, log: createLogger("silent") });
      try {
        const deadline = Date.now() + 10_000;
        while (!(await readDelivery(db.pool, id)) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        expect(await readDelivery(db.pool, id)).toMatchObject({ status: "pending" });
      } finally {
        await proxy.stop();
        channel.closeAllConnections();
        await new Promise((r) => channel.close(r));
      }
    });

  it("answers a delivery without GitHub's headers with a 4xx and keeps nothing", async () => {
    const before = (await db.pool.query("SELECT count(*)::int AS n FROM webhook_deliveries"))
      .rows[0].n;
    const res = await fetch(url, { method: "POST", body: "{}" });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(
      (await db.pool.query("SELECT count(*)::int AS n FROM webhook_deliveries")).rows[0].n,
    ).toBe(before);
  });
});
