import { Writable } from "node:stream";
import { Probot } from "probot";
import { describe, expect, it } from "vitest";
import { serveTether } from "../../src/app.js";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();

describe("the dashboard's credentials never reach the logs", () => {
  it("the access log keeps neither the ?token= value nor the session cookie", async () => {
    let out = "";
    const sink = new Writable({
      write(chunk, _enc, done) {
        out += String(chunk);
        done();
      },
    });
    const log = createLogger("info", sink);
    const TOKEN = "secret-dashboard-token-0123456789";
    const server = await serveTether(
      { env: loadEnv({ TETHER_DASHBOARD_TOKEN: TOKEN }), log, pool: db.pool },
      new Probot({ appId: 1, privateKey: "unused in this test", log }),
    );
    let cookie = "";
    try {
      const base = server.url;
      const signIn = await fetch(`${base}/dashboard?range=7d&token=${TOKEN}`, {
        redirect: "manual",
      });
      expect(signIn.status).toBe(303);
      cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
      expect(cookie).toMatch(/^tether_dashboard=\d+\./);
      expect((await fetch(`${base}/api/stats`, { headers: { cookie } })).status).toBe(200);
      await fetch(`${base}/dashboard?token=wrong-${TOKEN}`);
    } finally {
      await server.close();
    }
    const lines = out.split("\n").filter((l) => l.includes('"name":"http"'));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(out).toContain("/dashboard?range=7d");
    expect(out).not.toContain(TOKEN);
    expect(out).not.toContain(cookie.split("=")[1]);
  });
});
