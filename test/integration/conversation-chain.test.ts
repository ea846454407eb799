import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { conversationPath } from "../../src/core/conversation-path.js";
import type { Stats } from "../../src/sql/stats/figures.js";
import { readChain, type Chain } from "../../src/sql/stats/conversation.js";
import { dashboardRoutes } from "../../src/web/dashboard-routes.js";
import { serveHandlers, type Served } from "../../src/web/http.js";
import {
  ACTIVE,
  CHAIN_KEY,
  CHAIN_TOTALS,
  POISONED,
  POISONED_TRANSCRIPT,
  RETIRED,
  seedConversation,
} from "../helpers/conversation-seed.js";
import { createTestDatabase } from "../helpers/db.js";

const db = await createTestDatabase();
const TOKEN = "chain-test-token-0123456789";
const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
const PAGE = conversationPath(CHAIN_KEY);
const API = conversationPath(CHAIN_KEY, "/api/conversations");
let server: Served;

beforeAll(async () => {
  await seedConversation(db.pool, NOW);
  server = await serveHandlers([
    dashboardRoutes({
      env: loadEnv({ TETHER_DASHBOARD_TOKEN: TOKEN, LOG_LEVEL: "silent" }),
      log: createLogger("silent"),
      pool: db.pool,
      now: () => NOW,
    }),
  ]);
});
afterAll(async () => {
  await server?.close();
});

const bearer = { authorization: `Bearer ${TOKEN}` };
const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { headers, redirect: "manual" });

describe("readChain", () => {
  it("lists the key's tasks only, newest first, with every turn's facts and exact totals", async () => {
    const chain = (await readChain(db.pool, CHAIN_KEY, 5000)) as Chain;
    expect(chain.totals).toEqual(CHAIN_TOTALS);
    expect(chain.turns.map((t) => t.trigger)).toEqual([
      "comment", // the refused task (a comment asked)
      "ci",
      "label",
      "review",
      "comment",
    ]);
    const [refused, ci, label, review, first] = chain.turns;
    expect(refused).toMatchObject({ outcome: "limit_refused", resumeDecision: null });
    expect(ci).toMatchObject({
      sessionId: ACTIVE,
      resumeDecision: "resume",
      resumeReason: "resumed",
      model: "claude-sonnet-4-5",
      cacheTtl: "1h",
      costUsd: 0.07,
      inputTokens: 4000,
      publishResult: "unchanged",
    });
    expect(label).toMatchObject({ resumeDecision: "fresh", resumeReason: "poisoned" });
    expect(review).toMatchObject({ outcome: "poisoned", sessionId: POISONED });
    expect(first).toMatchObject({ pullOpened: 43, answerCommentId: 7001 });
    expect(chain.branch).toEqual({
      branch: "tether/issue-42",
      baseBranch: "main",
      headSha: "89abcdef0123456789abcdef0123456789abcdef",
      commits: 3,
      pullNumber: 43,
      pullUrl: "https://github.com/acme/chain/pull/43",
    });
    const byId = Object.fromEntries(chain.sessions.map((s) => [s.sessionId, s]));
    expect(byId[POISONED]).toMatchObject({
      state: "poisoned",
      transcriptBytes: POISONED_TRANSCRIPT.length,
    });
    expect(byId[ACTIVE]?.state).toBe("active");
    expect(byId[RETIRED]).toMatchObject({ state: "retired", transcriptBytes: null });
  });

  it("is null for a key without tasks", async () => {
    expect(await readChain(db.pool, { ...CHAIN_KEY, issueNumber: 999 }, 5000)).toBeNull();
  });
});

describe("GET /api/conversations/…", () => {
  it("returns the chain as JSON; its totals match /api/stats' row for the repository", async () => {
    const res = await get(API, bearer);
    expect(res.status).toBe(200);
    const chain = (await res.json()) as Chain;
    expect(chain.totals).toEqual(CHAIN_TOTALS);
    const stats = (await (await get("/api/stats?range=24h", bearer)).json()) as Stats;
    const row = stats.repos.find((r) => r.repo === CHAIN_KEY.repo && r.agent === CHAIN_KEY.agent);
    expect(row).toMatchObject({
      turns: chain.totals.turns,
      followUps: chain.totals.followUps,
      resumed: chain.totals.resumed,
      refused: chain.totals.refused,
      costUsd: chain.totals.costUsd,
      inputTokens: chain.totals.inputTokens,
      outputTokens: chain.totals.outputTokens,
    });
  });

  it("the owner and name are matched without regard to case; 404 for an unknown key", async () => {
    const upper = await get(API.replace("acme/chain", "Acme/Chain"), bearer);
    expect(((await upper.json()) as Chain).totals.turns).toBe(4);
    const none = await get(API.replace("/42/", "/999/"), bearer);
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: string }).error).toContain("acme/chain#999");
    expect((await get("/api/conversations/acme", bearer)).status).toBe(404);
  });
});

describe("GET /dashboard/conversations/…", () => {
  it("renders the same totals, every task, the branch and pull request", async () => {
    const res = await get(PAGE, bearer);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).toContain(`data-stat="turns" data-value="${CHAIN_TOTALS.turns}"`);
    expect(html).toContain(`data-stat="cost" data-value="${CHAIN_TOTALS.costUsd}"`);
    expect(html).toContain("tether/issue-42");
    expect(html).toContain('href="https://github.com/acme/chain/pull/43"');
    expect(html.match(/<tr data-task=/g)?.length).toBe(CHAIN_TOTALS.tasks);
    // Only the poisoned session's transcript is offered: the active one's is in use, the
    // retired one's is gone.
    expect(html).toContain(`data-download="${POISONED}"`);
    expect(html).not.toContain(`data-download="${ACTIVE}"`);
    expect(html).not.toContain(`data-download="${RETIRED}"`);
  });

  it("without the token: the sign-in form, which comes back to the page", async () => {
    const res = await get(PAGE);
    expect(res.status).toBe(401);
    const html = await res.text();
    expect(html).toContain(`name="next" value="${PAGE}"`);
    expect(html).not.toContain("data-stat");
    const login = await fetch(`${server.url}/dashboard/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${encodeURIComponent(TOKEN)}&next=${encodeURIComponent(PAGE)}`,
      redirect: "manual",
    });
    expect(login.status).toBe(303);
    expect(login.headers.get("location")).toBe(PAGE);
    // Anywhere else is not a place a sign-in sends the browser.
    for (const next of ["https://evil.example/", "//evil.example/", "/api/stats"]) {
      const other = await fetch(`${server.url}/dashboard/login`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `token=${encodeURIComponent(TOKEN)}&next=${encodeURIComponent(next)}`,
        redirect: "manual",
      });
      expect(other.headers.get("location")).toBe("/dashboard");
    }
  });

  it("?token= signs in and comes back to the conversation page", async () => {
    const res = await get(`${PAGE}?token=${encodeURIComponent(TOKEN)}`);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(PAGE);
  });
});

describe("the transcript download", () => {
  it("serves a poisoned session's stored transcript, gzip'd as stored", async () => {
    const res = await get(`${PAGE}/transcripts/${POISONED}`, bearer);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/gzip");
    expect(res.headers.get("content-disposition")).toBe(
      `attachment; filename="${POISONED}.jsonl.gz"`,
    );
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = Buffer.from(await res.arrayBuffer());
    expect(zlib.gunzipSync(body).equals(POISONED_TRANSCRIPT)).toBe(true);
  });

  it("refuses an active session's, one with nothing stored, and another key's", async () => {
    for (const path of [
      `${PAGE}/transcripts/${ACTIVE}`,
      `${PAGE}/transcripts/${RETIRED}`,
      `${conversationPath({ ...CHAIN_KEY, agent: "reviewer" })}/transcripts/${POISONED}`,
    ]) {
      const res = await get(path, bearer);
      expect(res.status, path).toBe(404);
      expect(await res.text()).toContain("poisoned or retired");
    }
  });
});
