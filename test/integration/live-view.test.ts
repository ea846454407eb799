/**
 * The live view's store and routes (#40) against real Postgres: the SSE stream woken by the
 * runner's NOTIFY (written here on another connection, as a runner process would), the
 * signature that opens one task only, TETHER_LIVE=token and off, the bound on a turn's events,
 * the prune, and the one signing key every process shares.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signLiveLink } from "../../src/core/live-link.js";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { liveRecorder } from "../../src/runner/render/live-recorder.js";
import { postgresTurnStore } from "../../src/sql/turn-store.js";
import {
  appendTurnEvent,
  liveLinkKey,
  pruneTurnEvents,
  readTurnEvents,
} from "../../src/sql/turn-events.js";
import { serveHandlers, type Served } from "../../src/web/http.js";
import { liveRoutes } from "../../src/web/live-routes.js";
import { createTestDatabase } from "../helpers/db.js";
import { seedTask } from "../helpers/seed.js";

const db = await createTestDatabase();
const log = createLogger("silent");
const TOKEN = "live-view-dashboard-token-0123";
const servers: Served[] = [];

async function serve(env: Record<string, string>): Promise<Served> {
  const s = await serveHandlers([
    liveRoutes({
      env: loadEnv({ LOG_LEVEL: "silent", TETHER_DASHBOARD_TOKEN: TOKEN, ...env }),
      log,
      pool: db.pool,
    } as never),
  ]);
  servers.push(s);
  return s;
}

let on: Served;
let token: Served;
let off: Served;
beforeAll(async () => {
  on = await serve({});
  token = await serve({ TETHER_LIVE: "token" });
  off = await serve({ TETHER_LIVE: "off" });
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function signed(taskId: number, days = 7): Promise<string> {
  const s = signLiveLink(await liveLinkKey(db.pool), taskId, new Date(Date.now() + days * 864e5));
  return `?exp=${s.exp}&sig=${s.sig}`;
}

/** Reads an SSE stream until `until` says the text so far is enough. */
async function readStream(url: string, until: (text: string) => boolean, onOpen?: () => void) {
  const ctl = new AbortController();
  const res = await fetch(url, { signal: ctl.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const reader = res.body!.getReader();
  let text = "";
  onOpen?.();
  const timer = setTimeout(() => ctl.abort(), 20_000);
  try {
    while (!until(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
  return text;
}

describe("the live view", () => {
  it("streams a running task's events as they are written, woken by NOTIFY, and ends when it finishes", async () => {
    const task = await seedTask(db.pool, { status: "running", issue_number: 5 });
    const id = Number(task.id);
    await appendTurnEvent(db.pool, id, "init", { model: "m" });
    const q = await signed(id);
    const page = await fetch(`${on.url}/live/${id}${q}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'nonce-");
    expect(await page.text()).toContain(`/live/${id}/events${q.replace("&", "&amp;")}`);

    const started = Date.now();
    const text = await readStream(
      `${on.url}/live/${id}/events${q}`,
      (t) => t.includes("event: end"),
      () => {
        // Another connection, as the runner's: the stream learns of it by NOTIFY.
        setTimeout(() => {
          void (async () => {
            await appendTurnEvent(db.pool, id, "tool_use", { id: "t", name: "Bash", input: "ls" });
            await db.pool.query(
              `UPDATE tasks SET status = 'succeeded', locked_by = NULL, finished_at = now() WHERE id = $1`,
              [id],
            );
          })();
        }, 300);
      },
    );
    expect(text).toMatch(/event: turn\ndata: .*"kind":"init"/);
    expect(text).toMatch(/event: turn\ndata: .*"kind":"tool_use".*"input":"ls"/);
    expect(text).toContain('event: end\ndata: {"status":"succeeded"}');
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("opens with its own task's signature only: another task's, an expired or a missing one is refused", async () => {
    const a = Number((await seedTask(db.pool, { status: "running", issue_number: 6 })).id);
    const b = Number((await seedTask(db.pool, { status: "running", issue_number: 99 })).id);
    const qa = await signed(a);
    expect((await fetch(`${on.url}/live/${a}${qa}`)).status).toBe(200);
    expect((await fetch(`${on.url}/live/${b}${qa}`)).status).toBe(403);
    expect((await fetch(`${on.url}/live/${b}/events${qa}`)).status).toBe(403);
    expect((await fetch(`${on.url}/live/${a}`)).status).toBe(403);
    expect((await fetch(`${on.url}/live/${a}${await signed(a, -1)}`)).status).toBe(403);
    // The dashboard's token opens nothing here in this mode; nor does the signature elsewhere.
    const bearer = { authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${on.url}/live/${a}`, { headers: bearer })).status).toBe(403);
    expect((await fetch(`${on.url}/dashboard${qa}`)).status).toBe(404);
    expect((await fetch(`${on.url}/api/stats${qa}`)).status).toBe(404);
  });

  it("TETHER_LIVE=token asks for the dashboard's token; off serves nothing", async () => {
    const a = Number((await seedTask(db.pool, { status: "running", issue_number: 7 })).id);
    const bearer = { authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${token.url}/live/${a}${await signed(a)}`)).status).toBe(401);
    expect((await fetch(`${token.url}/live/${a}`, { headers: bearer })).status).toBe(200);
    expect((await fetch(`${off.url}/live/${a}${await signed(a)}`)).status).toBe(404);
  });

  it("keeps a turn's events bounded, the newest kept and the drop said", async () => {
    const id = Number((await seedTask(db.pool, { status: "running", issue_number: 8 })).id);
    const rec = liveRecorder({
      // The live view's rows are the task's alone: the key is not read.
      journal: postgresTurnStore(db.pool).journal(
        { id, repoId: 1, repo: "octo/widgets", issueNumber: 8, agent: "tether" },
        "runner-live",
      ),
      scrub: (s) => s.replaceAll("sekret", "[redacted]"),
      log,
      bound: { maxEvents: 20, maxBytes: 1024 * 1024 },
    });
    rec.record({
      type: "init",
      sessionId: "s",
      model: "m",
      cwd: null,
      cliVersion: null,
      permissionMode: null,
      tools: [],
    });
    for (let i = 0; i < 60; i++) {
      rec.record({
        type: "tool_use",
        id: `t${i}`,
        name: "Bash",
        input: { command: `echo sekret ${i}` },
        parentToolUseId: null,
      });
    }
    await rec.flush();
    const rows = await readTurnEvents(db.pool, id);
    const kinds = rows.map((r) => r.kind);
    expect(kinds[0]).toBe("init");
    const tools = rows.filter((r) => r.kind === "tool_use");
    expect(tools.length).toBeLessThanOrEqual(22);
    expect((tools.at(-1)!.body as { input: string }).input).toContain("59");
    expect(JSON.stringify(rows)).not.toContain("sekret");
    const dropped = rows.filter((r) => r.kind === "dropped");
    expect(dropped).toHaveLength(1);
    expect(dropped[0]!.body).toEqual({ events: 60 - tools.length, toolCalls: 60 - tools.length });
  });

  it("prunes the events of long-finished tasks, and they go with their task", async () => {
    const old = Number((await seedTask(db.pool, { status: "succeeded", issue_number: 9 })).id);
    await db.pool.query(`UPDATE tasks SET finished_at = now() - interval '30 days' WHERE id = $1`, [
      old,
    ]);
    const fresh = Number((await seedTask(db.pool, { status: "succeeded", issue_number: 10 })).id);
    await db.pool.query(`UPDATE tasks SET finished_at = now() WHERE id = $1`, [fresh]);
    await appendTurnEvent(db.pool, old, "text", { text: "old" });
    await appendTurnEvent(db.pool, fresh, "text", { text: "new" });
    expect(await pruneTurnEvents(db.pool, { olderThanMs: 14 * 864e5 })).toBe(1);
    expect(await readTurnEvents(db.pool, old)).toEqual([]);
    expect(await readTurnEvents(db.pool, fresh)).toHaveLength(1);
    await db.pool.query(`DELETE FROM tasks WHERE id = $1`, [fresh]);
    const left = await db.pool.query(
      `SELECT count(*)::int AS n FROM turn_events WHERE task_id = $1`,
      [fresh],
    );
    expect(left.rows[0].n).toBe(0);
  });

  it("has one signing key for every process", async () => {
    const [a, b] = await Promise.all([liveLinkKey(db.pool), liveLinkKey(db.pool)]);
    expect(a.length).toBe(32);
    expect(a.equals(b)).toBe(true);
  });
});
