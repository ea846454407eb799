import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversationPath } from "../../src/core/conversation-path.js";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import type { Chain } from "../../src/sql/stats/conversation.js";
import type { Stats } from "../../src/sql/stats/figures.js";
import { dashboardRoutes } from "../../src/web/dashboard-routes.js";
import { serveHandlers, type Served } from "../../src/web/http.js";
import {
  CHAIN_KEY,
  POISONED,
  POISONED_TRANSCRIPT,
  seedConversation,
} from "../helpers/conversation-seed.js";
import { createTestDatabase } from "../helpers/db.js";

/**
 * A conversation's chain in chromium (Debian's, as test/browser/dashboard.test.ts): reached from
 * the dashboard's latest tasks, its numbers equal to /api/conversations/… and /api/stats, the
 * transcript downloaded, a screenshot saved in test-results/.
 */
const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "browser-chain-token-0123456789";
const RESULTS = path.resolve(import.meta.dirname, "../../test-results");
const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);

const db = await createTestDatabase();
let server: Served;
let browser: Browser;

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: install it with \`apt-get update && apt-get install -y chromium\`.`,
    );
  }
  await seedConversation(db.pool, NOW);
  server = await serveHandlers([
    dashboardRoutes({
      env: loadEnv({ TETHER_DASHBOARD_TOKEN: TOKEN, LOG_LEVEL: "silent" }),
      log: createLogger("silent"),
      pool: db.pool,
      now: () => NOW,
    }),
  ]);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
    timeout: 30_000,
  });
  fs.mkdirSync(RESULTS, { recursive: true });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function api<T>(p: string): Promise<T> {
  const res = await fetch(`${server.url}${p}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

const int = (n: number) => new Intl.NumberFormat("en-US").format(Math.round(n));

describe("the conversation page in chromium", () => {
  it("is reached from the dashboard; its numbers equal the JSON API's and /api/stats'; the transcript downloads", async () => {
    const context = await browser.newContext({
      viewport: { width: 1366, height: 768 },
      acceptDownloads: true,
    });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    page.on("pageerror", (e) => errors.push(e.message));
    try {
      await page.goto(`${server.url}/dashboard?token=${encodeURIComponent(TOKEN)}`);
      await page.waitForSelector('body[data-loaded="24h"]', { timeout: 15_000 });
      const stats = await api<Stats>("/api/stats?range=24h");
      const latest = stats.latest.find(
        (t) =>
          t.repo === CHAIN_KEY.repo &&
          t.issueNumber === CHAIN_KEY.issueNumber &&
          t.agent === CHAIN_KEY.agent,
      );
      await page
        .locator("#latest")
        .screenshot({ path: path.join(RESULTS, "dashboard-latest-chain-links.png") });
      await page.click(`#latest tr[data-task="${latest?.id}"] a[data-conversation]`);
      await page.waitForSelector('main[data-loaded="conversation"]', { timeout: 15_000 });
      expect(new URL(page.url()).pathname).toBe(conversationPath(CHAIN_KEY));

      const chain = await api<Chain>(conversationPath(CHAIN_KEY, "/api/conversations"));
      const t = chain.totals;
      const stat = (name: string) => page.locator(`[data-stat="${name}"]`);
      const tokens = t.inputTokens + t.cacheReadTokens + t.cacheCreationTokens;
      for (const [name, value, text] of [
        ["turns", t.turns, int(t.turns)],
        ["resumed", t.resumed, int(t.resumed)],
        ["cost", t.costUsd, `$${t.costUsd.toFixed(4)}`],
        ["tokens", tokens, int(tokens)],
        ["failed", t.failed, int(t.failed)],
      ] as const) {
        expect(await stat(name).getAttribute("data-value"), name).toBe(String(value));
        expect(await stat(name).textContent(), name).toBe(text);
      }
      // The same figures in /api/stats: this conversation is its (repository, agent) row.
      const row = stats.repos.find((r) => r.repo === CHAIN_KEY.repo && r.agent === CHAIN_KEY.agent);
      expect(row?.turns).toBe(Number(await stat("turns").getAttribute("data-value")));
      expect(row?.costUsd).toBe(Number(await stat("cost").getAttribute("data-value")));
      expect(row?.resumed).toBe(Number(await stat("resumed").getAttribute("data-value")));

      // One row per task, each turn's cost as the API has it; the branch and pull request.
      expect(await page.locator("#turns tbody tr[data-task]").count()).toBe(chain.turns.length);
      for (const turn of chain.turns) {
        const cells = page.locator(`#turns tr[data-task="${turn.id}"] td`);
        expect(await cells.nth(2).textContent()).toContain(turn.trigger);
        expect(await cells.nth(10).getAttribute("data-value")).toBe(
          turn.costUsd === null ? null : String(turn.costUsd),
        );
      }
      expect(await stat("branch").textContent()).toBe(chain.branch?.branch);
      expect(await stat("pull").locator("a").getAttribute("href")).toBe(chain.branch?.pullUrl);

      const overflow = await page.evaluate<number>(
        "document.documentElement.scrollWidth - window.innerWidth",
      );
      expect(overflow).toBeLessThanOrEqual(0);
      await page.screenshot({ path: path.join(RESULTS, "conversation-1366x768.png") });
      await page.screenshot({
        path: path.join(RESULTS, "conversation-1366x768-full.png"),
        fullPage: true,
      });

      // The poisoned session's transcript, downloaded as the browser does it.
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.click(`a[data-download="${POISONED}"]`),
      ]);
      expect(download.suggestedFilename()).toBe(`${POISONED}.jsonl.gz`);
      const file = await download.path();
      expect(zlib.gunzipSync(fs.readFileSync(file)).equals(POISONED_TRANSCRIPT)).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);
});
