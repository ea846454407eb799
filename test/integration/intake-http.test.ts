import { createHmac, randomUUID } from "node:crypto";
import { Probot, Server } from "probot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROBOT_WEBHOOK_PATH, tetherApp } from "../../src/app.js";
import { freePort } from "../../src/db/embedded.js";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { readDelivery } from "../../src/sql/deliveries.js";
import { createTestDatabase } from "../helpers/db.js";
import { commentCreated } from "../helpers/intake-payloads.js";
import { APP_ID, TestOctokit, testPrivateKey, WEBHOOK_SECRET } from "../helpers/probot.js";

const db = await createTestDatabase();
// Both ways in: Probot's middleware at the default path (a bare Probot Server, and what a
// development webhook proxy reaches), and Tether's own route, which main.ts serves at
// /api/github/webhooks with Probot's middleware moved aside.
describe.each([
  { via: "Probot's webhook middleware", probotPath: undefined },
  { via: "Tether's own webhook route (as main.ts serves it)", probotPath: PROBOT_WEBHOOK_PATH },
])("the webhook endpoint, through $via", ({ probotPath }) => {
  const base = probotPath ? 1800 : 800; // comment ids of their own: both blocks share a database
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const log = createLogger("silent");
    const env = loadEnv({ APP_ID: String(APP_ID), PRIVATE_KEY: testPrivateKey(), WEBHOOK_SECRET });
    const port = await freePort();
    server = new Server({
      host: "127.0.0.1",
      port,
      log,
      ...(probotPath ? { webhookPath: probotPath } : {}),
      Probot: Probot.defaults({
        appId: APP_ID,
        privateKey: testPrivateKey(),
        secret: WEBHOOK_SECRET,
        Octokit: TestOctokit,
        log,
      }),
    });
    await server.load(tetherApp({ env, log, pool: db.pool }));
    await server.start();
    url = `http://127.0.0.1:${port}/api/github/webhooks`;
  });
  afterAll(() => server.stop());

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
    if (probotPath) expect(await res.json()).toEqual({ error: "signature does not match" });
  });

  // Only Tether's own route has an old path to compare with.
  if (probotPath)
    it("Probot's middleware takes nothing: its old path is a 404, and a development proxy's target is Tether's route", async () => {
      const root = url.replace(/\/api\/github\/webhooks$/, "");
      const body = JSON.stringify(
        commentCreated({ commentId: base + 5, issueNumber: 8, body: "@tether hi" }),
      );
      const headers = (id: string) => ({
        "content-type": "application/json",
        "x-github-event": "issue_comment",
        "x-github-delivery": id,
        "x-hub-signature-256": `sha256=${createHmac("sha256", WEBHOOK_SECRET).update(body).digest("hex")}`,
      });
      const old = randomUUID();
      const gone = await fetch(`${root}/api/github/webhooks/probot`, {
        method: "POST",
        headers: headers(old),
        body,
      });
      expect(gone.status).toBe(404);
      expect(await readDelivery(db.pool, old)).toBeUndefined();
      // Probot's webhook proxy forwards to http://<host>:<port> + webhookPath.
      const proxied = randomUUID();
      const res = await fetch(`${root}${probotPath}`, {
        method: "POST",
        headers: headers(proxied),
        body,
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true }); // Tether's answer; Probot's is "ok\n"
      expect(await readDelivery(db.pool, proxied)).toMatchObject({ status: "pending" });
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
