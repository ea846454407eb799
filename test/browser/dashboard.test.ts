import fs from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { recordGithubRequest, type Headroom } from "../../src/github/request-count.js";
import type { Stats as DbStats } from "../../src/sql/stats/figures.js";
import { dashboardRoutes } from "../../src/web/dashboard-routes.js";
import { serveHandlers, type Served } from "../../src/web/http.js";
import { saveHeadroom } from "../../src/sql/rate-limits.js";
import { seedRealisticTasks, seedSchedules } from "../helpers/dashboard-seed.js";
import { seedTask } from "../helpers/seed.js";
import { createTestDatabase } from "../helpers/db.js";

/**
 * The dashboard in a real browser: Debian's chromium (installed by .ci/run; never a browser
 * download), driven by playwright-core, against the real handlers on a seeded database.
 */
const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "browser-test-token-0123456789";
const REBOUND = "rebound.attacker.test";
const RESULTS = path.resolve(import.meta.dirname, "../../test-results");
// The server's clock is pinned so the windows cannot move between the page and the API call.
const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
/** When installation 9302's rate-limit window resets: an hour from now (Postgres's clock). */
const DEFERRED_UNTIL = Math.floor(Date.now() / 1000) + 3600;

const db = await createTestDatabase();
let server: Served;
let browser: Browser;

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the dashboard's browser test needs Debian's chromium. ` +
        "Install it with `apt-get update && apt-get install -y chromium` (.ci/run does this).",
    );
  }
  await seedRealisticTasks(db.pool, { now: NOW });
  // The headroom is the serving process's own: one response from GitHub with its headers.
  recordGithubRequest({
    installation: 9301,
    kind: "intake",
    response: { status: 200, headers: { "x-ratelimit-remaining": "4321" } },
  });
  // An installation below the reserve (100, the default), one of its tasks waiting for the reset.
  await saveHeadroom(db.pool, [
    { installationId: 9302, remaining: 12, limit: 5000, resetAt: DEFERRED_UNTIL },
  ]);
  await seedTask(db.pool, {
    repo: "octo/deferred",
    installation_id: 9302,
    deferred_until: new Date(DEFERRED_UNTIL * 1000),
  });
  // Three schedules (#41); the one that ran points at a finished scheduled turn.
  const ran = await seedTask(db.pool, {
    repo: "octo/widgets",
    issue_number: 42,
    trigger: "schedule",
    trigger_author: "(schedule)",
    trigger_url: "https://github.com/octo/widgets/issues/42",
    status: "succeeded",
    outcome: "success",
    created_at: new Date(NOW.getTime() - 35 * 60_000),
    finished_at: new Date(NOW.getTime() - 34 * 60_000),
  });
  await seedSchedules(db.pool, { now: NOW, lastTaskId: ran.id as number });
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
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      // A name an attacker controls, pointed at this machine: DNS rebinding, without DNS.
      `--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`,
    ],
    timeout: 30_000,
  });
  fs.mkdirSync(RESULTS, { recursive: true });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** What /api/stats answers: the figures from Postgres and this process's GitHub headroom. */
type Stats = DbStats & { githubHeadroom: Record<string, Headroom> };

async function apiStats(range: string): Promise<Stats> {
  const res = await fetch(`${server.url}/api/stats?range=${range}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Stats;
}

const pct = (r: number | null) => (r === null ? "–" : `${(r * 100).toFixed(1)}%`);
const int = (n: number) => new Intl.NumberFormat("en-US").format(Math.round(n));

/** Opens the page signed in through ?token=, collecting console errors (CSP violations among them). */
async function open(
  width: number,
  height: number,
): Promise<{ page: Page; errors: string[]; statsRequests: () => number }> {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(e.message));
  let stats = 0;
  page.on("request", (r) => {
    if (r.url().includes("/api/stats")) stats++;
  });
  await page.clock.install({ time: NOW });
  const res = await page.goto(`${server.url}/dashboard?token=${encodeURIComponent(TOKEN)}`);
  expect(res?.status()).toBe(200);
  expect(page.url()).toBe(`${server.url}/dashboard?range=24h`);
  await page.waitForSelector('body[data-loaded="24h"]', { timeout: 15_000 });
  return { page, errors, statsRequests: () => stats };
}

async function expectPageMatches(page: Page, s: Stats): Promise<void> {
  const stat = (name: string) => page.locator(`[data-stat="${name}"]`);
  expect(await stat("resumeRate").textContent()).toBe(pct(s.resumeRate));
  expect(await stat("resumeRate").getAttribute("data-value")).toBe(String(s.resumeRate));
  expect(await stat("turns").getAttribute("data-value")).toBe(String(s.totals.turns));
  expect(await stat("resumeDetail").textContent()).toBe(
    `${int(s.totals.resumed)} resumed of ${int(s.totals.followUps)} follow-ups`,
  );
  expect(await stat("queueDepth").textContent()).toBe(int(s.queue.depth));
  expect(await stat("running").textContent()).toBe(int(s.queue.running));
  expect(s.totals.refused).toBeGreaterThan(0); // the seed has refusals in every range
  expect(await stat("refused").getAttribute("data-value")).toBe(String(s.totals.refused));
  expect(await stat("refused").textContent()).toBe(
    `${int(s.totals.refused)} refused by a spend limit`,
  );

  // The chart: one stacked bar per bucket, a line through every bucket that had follow-ups.
  const chart = page.locator("#rate-chart");
  expect(await chart.getAttribute("data-buckets")).toBe(String(s.series.length));
  const withRate = s.series.filter((p) => p.resumeRate !== null).length;
  expect(withRate).toBeGreaterThan(0);
  const line = chart.locator("path.rate-line");
  expect(await line.getAttribute("data-points")).toBe(String(withRate));
  expect(((await line.getAttribute("d")) ?? "").match(/[ML]/g)?.length).toBe(withRate);
  expect(await chart.locator("rect.bar-resumed").count()).toBe(s.series.length);
  const drawn = await chart
    .locator("rect.bar-resumed")
    .evaluateAll((rs) => rs.reduce((a, r) => a + Number(r.getAttribute("height")), 0));
  expect(drawn).toBeGreaterThan(0);
  const box = await chart.boundingBox();
  expect(box?.width).toBeGreaterThan(300);
  expect(box?.height).toBeGreaterThan(150);

  // Every reason code with its count.
  for (const [code, count] of Object.entries(s.reasons)) {
    expect(await page.locator(`li[data-reason="${code}"] .count`).textContent()).toBe(int(count));
  }
  // One row per repository and agent, busiest first; one per latest task, linked to its comment.
  expect(await page.locator("#repos tbody tr[data-repo]").count()).toBe(s.repos.length);
  expect(await page.locator("#repos tbody tr").first().getAttribute("data-repo")).toBe(
    `${s.repos[0]?.repo}/${s.repos[0]?.agent}`,
  );
  expect(await page.locator("#latest tbody tr[data-task]").count()).toBe(s.latest.length);
  const first = page.locator(`#latest tr[data-task="${s.latest[0]?.id}"]`);
  expect(await first.locator("a").first().getAttribute("href")).toBe(s.latest[0]?.triggerUrl);
  expect(await page.locator("#runners tbody tr[data-runner]").count()).toBe(s.runners.length);
  // Each runner says how it runs agents; anything but the sandbox stands out.
  for (const r of s.runners) {
    const cell = page.locator(`#runners tr[data-runner="${r.id}"] [data-sandbox]`);
    expect(await cell.textContent()).toBe(r.sandbox ?? "–");
    expect(await cell.getAttribute("class")).toBe(r.sandbox?.startsWith("bwrap") ? "" : "warn");
  }
  for (const [outcome, count] of Object.entries(s.outcomes).filter(([, n]) => n > 0)) {
    expect(await page.locator(`[data-outcome="${outcome}"]`).textContent()).toBe(
      `${outcome} ${int(count)}`,
    );
  }
  for (const [trigger, count] of Object.entries(s.triggers)) {
    expect(await page.locator(`[data-trigger="${trigger}"]`).textContent()).toBe(
      `${trigger} ${int(count)}`,
    );
  }
  // CI loops by how they ended, every state shown (#29).
  for (const [state, count] of Object.entries(s.ci.loops))
    expect(await page.locator(`[data-ci="${state}"]`).textContent()).toBe(`${state} ${int(count)}`);
  // Reviews the agents posted (#29).
  for (const [label, count] of [
    ["posted", s.reviews.posted],
    ["failed", s.reviews.failed],
    ["line comments", s.reviews.lineComments],
  ] as const)
    expect(await page.locator(`[data-reviews="${label}"]`).textContent()).toBe(
      `${label} ${int(count)}`,
    );
  // GitHub requests per turn by kind, and the headroom GitHub last reported (#34).
  expect(s.githubRequests.followUp.median).not.toBeNull();
  for (const [kind, f] of Object.entries(s.githubRequests))
    expect(await page.locator(`[data-gh-requests="${kind}"]`).textContent()).toBe(
      `${kind} ${f.median === null ? "–" : int(f.median)}`,
    );
  expect(s.githubHeadroom["9301"]?.remaining).toBe(4321);
  expect(await page.locator('[data-gh-headroom="9301"]').textContent()).toBe("#9301 4,321 left");
  // Stored by the runners in Postgres, with the tasks waiting for the window's reset.
  expect(s.githubHeadroom["9302"]).toMatchObject({ remaining: 12, deferred: 1 });
  const clock = new Date(DEFERRED_UNTIL * 1000).toISOString().slice(11, 16);
  expect(await page.locator('[data-gh-headroom="9302"]').textContent()).toBe(
    `#9302 12 left · 1 waiting until ${clock} UTC`,
  );
  // MCP tool calls per server (#39): none in the last day, three servers (one never called) before.
  const mcp = Object.entries(s.mcpToolCalls);
  if (s.range === "24h") {
    expect(mcp).toEqual([]);
    expect(await page.locator("#mcp-tool-calls").textContent()).toBe(
      "No turn in this range was given an MCP server.",
    );
  } else {
    expect(s.mcpToolCalls).toMatchObject({ linear: 0 });
    expect(s.mcpToolCalls.sentry).toBeGreaterThan(0);
    expect(s.mcpToolCalls.docs).toBeGreaterThan(0);
  }
  expect(await page.locator("#mcp-tool-calls [data-mcp-server]").allTextContents()).toEqual(
    mcp.map(([server, calls]) => `${server} ${int(calls)}`),
  );
  // Every schedule, whatever the range: repository, agent, issue, cron, last run, next run (#41).
  expect(s.schedules).toHaveLength(3);
  const rows = page.locator("#schedules tbody tr[data-schedule]");
  expect(await rows.count()).toBe(s.schedules.length);
  const cells = async (key: string) =>
    page.locator(`#schedules tr[data-schedule="${key}"] td`).allTextContents();
  expect(await cells("octo/widgets/tether#42")).toEqual([
    "octo/widgets",
    "tether",
    "#42",
    "0 * * * *",
    expect.stringMatching(/^3[5-9] m \d+ s ago success$/),
    // The page's clock starts at NOW and runs on.
    expect.stringMatching(/^in 2[0-5] m \d+ s$/),
  ]);
  expect(
    await page
      .locator('#schedules tr[data-schedule="octo/widgets/tether#42"] a')
      .getAttribute("href"),
  ).toBe("https://github.com/octo/widgets/issues/42");
  expect(await cells("octo/gadgets/reviewer#7")).toEqual([
    "octo/gadgets",
    "reviewer",
    "#7",
    "0 9 * * 1",
    "never",
    expect.stringMatching(/^in (2 h 0 m|1 h 5\d m)$/),
  ]);
  expect(await cells("octo/reports/tether#Daily report")).toEqual([
    "octo/reports",
    "tether",
    "new: Daily report",
    "30 6 * * *",
    "never",
    expect.stringMatching(/^in (1 d 0 h|23 h 5\d m)$/),
  ]);
  expect(await page.locator("#schedules-note").textContent()).toBe("3 schedules, next due first");
}

describe("the dashboard in chromium", () => {
  it("at 1366×768: signs in with ?token=, draws the chart, and its numbers match /api/stats", async () => {
    const { page, errors, statsRequests } = await open(1366, 768);
    try {
      await expectPageMatches(page, await apiStats("24h"));
      // No horizontal scrolling on a laptop screen.
      const overflow = await page.evaluate<number>(
        "document.documentElement.scrollWidth - window.innerWidth",
      );
      expect(overflow).toBeLessThanOrEqual(0);
      await page.screenshot({ path: path.join(RESULTS, "dashboard-1366x768.png") });
      await page.screenshot({
        path: path.join(RESULTS, "dashboard-1366x768-full.png"),
        fullPage: true,
      });

      // Another range: the buttons fetch it and redraw; the URL remembers it.
      await page.click('button[data-range="7d"]');
      await page.waitForSelector('body[data-loaded="7d"]', { timeout: 15_000 });
      await expectPageMatches(page, await apiStats("7d"));
      expect(page.url()).toBe(`${server.url}/dashboard?range=7d`);

      // Auto-refresh: on by default, fetches again after 30 s; off stops it.
      expect(await page.locator("#auto").isChecked()).toBe(true);
      const before = statsRequests();
      await page.clock.fastForward(31_000);
      await expect.poll(statsRequests, { timeout: 5000 }).toBeGreaterThan(before);
      await page.locator("#auto").uncheck();
      const afterOff = statsRequests();
      await page.clock.fastForward(65_000);
      await page.waitForTimeout(200);
      expect(statsRequests()).toBe(afterOff);
      expect(errors).toEqual([]);
    } finally {
      await page.context().close();
    }
  }, 60_000);

  it("at 1920×1080: the same page, no overflow, no console errors", async () => {
    const { page, errors } = await open(1920, 1080);
    try {
      await page.click('button[data-range="30d"]');
      await page.waitForSelector('body[data-loaded="30d"]', { timeout: 15_000 });
      await expectPageMatches(page, await apiStats("30d"));
      const overflow = await page.evaluate<number>(
        "document.documentElement.scrollWidth - window.innerWidth",
      );
      expect(overflow).toBeLessThanOrEqual(0);
      await page.screenshot({ path: path.join(RESULTS, "dashboard-1920x1080.png") });
      expect(errors).toEqual([]);
    } finally {
      await page.context().close();
    }
  }, 60_000);

  it("the sign-in form works in the browser", async () => {
    const context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
    const page = await context.newPage();
    try {
      await page.goto(`${server.url}/dashboard`);
      await page.screenshot({ path: path.join(RESULTS, "dashboard-sign-in.png") });
      await page.fill("#token", "not-the-token-at-all");
      await page.click('button[type="submit"]');
      expect(await page.locator('[role="alert"]').textContent()).toContain("does not match");
      await page.fill("#token", TOKEN);
      await page.click('button[type="submit"]');
      await page.waitForSelector('body[data-loaded="24h"]', { timeout: 15_000 });
      const cookies = await context.cookies();
      expect(cookies.map((c) => c.value).join(" ")).not.toContain(TOKEN);
      expect(cookies.find((c) => c.name === "tether_dashboard")?.httpOnly).toBe(true);
    } finally {
      await context.close();
    }
  }, 60_000);

  it("a page under a rebound name gets neither the dashboard nor the figures", async () => {
    const context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
    const page = await context.newPage();
    try {
      const rebound = server.url.replace("127.0.0.1", REBOUND);
      // Even with the token in hand, the dashboard does not answer for that name.
      const res = await page.goto(`${rebound}/dashboard?token=${encodeURIComponent(TOKEN)}`);
      expect(res?.status()).toBe(421);
      expect(await page.locator("body").textContent()).toContain("TETHER_PUBLIC_HOSTS");
      expect(await context.cookies()).toEqual([]);
      // The attacker's script, same origin as the rebound name, reads nothing.
      const read = await page.evaluate(async () => {
        const r = await fetch("/api/stats");
        return { status: r.status, body: await r.text() };
      });
      expect(read.status).toBe(421);
      expect(read.body).not.toContain("resumeRate");
    } finally {
      await context.close();
    }
  }, 60_000);
});
