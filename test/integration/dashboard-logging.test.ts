import { Writable } from "node:stream";
import { Probot, Server } from "probot";
import { describe, expect, it } from "vitest";
import { tetherApp } from "../../src/app.js";
import { freePort } from "../../src/db/embedded.js";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();

describe("the dashboard's credentials never reach the logs", () => {
  it("Probot's access log keeps neither the ?token= value nor the session cookie", async () => {
    let out = "";
    const sink = new Writable({
      write(chunk, _enc, done) {
        out += String(chunk);
        done();
      },
    });
    const log = createLogger("info", sink);
    const TOKEN = "secret-dashboard-token-0123456789";
    const port = await freePort();
    const server = new Server({
      host: "127.0.0.1",
      port,
      log: log.child({ component: "probot" }),
      Probot: Probot.defaults({ appId: 1, privateKey: "unused in this test", log }),
    });
    await server.load(
      tetherApp({ env: loadEnv({ TETHER_DASHBOARD_TOKEN: TOKEN }), log, pool: db.pool }),
    );
    await server.start();
    let cookie = "";
    try {
      const base = `http://127.0.0.1:${port}`;
      const signIn = await fetch(`${base}/dashboard?range=7d&token=${TOKEN}`, {
        redirect: "manual",
      });
      expect(signIn.status).toBe(303);
      cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
      expect(cookie).toMatch(/^tether_dashboard=\d+\./);
      expect((await fetch(`${base}/api/stats`, { headers: { cookie } })).status).toBe(200);
      await fetch(`${base}/dashboard?token=wrong-${TOKEN}`);
    } finally {
      await server.stop();
    }
    const lines = out.split("\n").filter((l) => l.includes('"name":"http"'));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(out).toContain("/dashboard?range=7d");
    expect(out).not.toContain(TOKEN);
    expect(out).not.toContain(cookie.split("=")[1]);
  });
});
