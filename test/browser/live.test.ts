/**
 * The live view of a running turn in chromium (#40): the built app as a process, real Postgres,
 * the real Claude CLI in its sandbox against the fake Messages API, the GitHub stand-in. The
 * tracking comment links the page ("watch live", signed for the task); the page is opened while
 * the model's first reply is held back, then the turn sits in a Bash call that waits for a file
 * the test writes. The page must show that call's input within a second of its row appearing in
 * Postgres, and after the turn, the answer. A screenshot of the turn in progress is saved in
 * test-results/ (docs/live-view.png is one of them).
 */
import fs from "node:fs";
import path from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/embedded.js";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import { replies } from "../helpers/fake-anthropic.js";

const CHROMIUM = "/usr/bin/chromium";
const RESULTS = path.resolve(import.meta.dirname, "../../test-results");
const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
    allowedTools: ["Bash"]
`;
const RELEASE = ".live-release";
const COMMAND = `while [ ! -e /workspace/${RELEASE} ]; do sleep 0.1; done; rm -f /workspace/${RELEASE}; echo released-by-the-test`;
const ANSWER = "All done: the live view watched me wait.";

const db = await createTestDatabase();
let stack: Stack;
let browser: Browser;

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: install it with \`apt-get update && apt-get install -y chromium\`.`,
    );
  }
  const port = await freePort();
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    config: CONFIG,
    env: { PORT: String(port), TETHER_PUBLIC_URL: `http://127.0.0.1:${port}` },
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
    timeout: 30_000,
  });
  fs.mkdirSync(RESULTS, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

async function waitFor<T>(what: string, f: () => T | undefined | Promise<T | undefined>) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The workspace the turn runs in (a checkout of the stand-in's repository). */
function findWorkspace(dir: string, depth = 5): string | undefined {
  if (fs.existsSync(path.join(dir, "src", "split.js"))) return dir;
  if (depth === 0) return undefined;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory() || e.name === ".git") continue;
    const found = findWorkspace(path.join(dir, e.name), depth - 1);
    if (found) return found;
  }
  return undefined;
}

describe("the live view in chromium", () => {
  it("is linked from the tracking comment, shows a held tool call's input within a second of its row, then the answer", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    stack.api.script(
      replies.deferred(held, replies.toolUse("Bash", { command: COMMAND, description: "wait" })),
      replies.text(ANSWER),
    );
    const issue = stack.gh.addIssue({
      repo: REPO,
      title: "watch me",
      body: "Wait for the test.",
      user: "alice",
    }).number as number;
    const commentId = await stack.comment(issue, "@tether wait until you are released");

    // The tracking comment, posted when the turn starts, links the page, signed for its task.
    const link = await waitFor("the watch-live link", () => {
      for (const c of stack.gh.comments(REPO, issue)) {
        const m =
          /\[watch live\]\((http:\/\/127\.0\.0\.1:\d+\/live\/(\d+)\?exp=\d+&sig=[\w-]+)\)/.exec(
            String(c.body),
          );
        if (m) return { url: m[1]!, taskId: Number(m[2]) };
      }
      return undefined;
    });

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(link.url);
    await page.locator("#conn", { hasText: "live" }).waitFor({ timeout: 30_000 });
    // The moment the tool's input is on the page, by the browser's clock (the same machine's).
    await page.evaluate(`
      new MutationObserver(() => {
        if (!window.shownAt && document.querySelector("li.tool_use .tool-input"))
          window.shownAt = Date.now();
      }).observe(document.getElementById("events"), { childList: true, subtree: true });
    `);

    release();
    const row = await waitFor("the tool call's row", async () => {
      const r = await db.pool.query<{ at: Date; body: { input: string } }>(
        `SELECT created_at AS at, body FROM turn_events WHERE task_id = $1 AND kind = 'tool_use'`,
        [link.taskId],
      );
      return r.rows[0];
    });
    expect(row.body.input).toContain(RELEASE);
    const input = page.locator("li.tool_use .tool-input");
    await input.waitFor({ timeout: 10_000 });
    expect(await input.textContent()).toContain(RELEASE);
    const shownAt = (await page.evaluate("window.shownAt")) as number;
    // Within a second of the runner writing the row (its transaction's time in Postgres).
    expect(shownAt - row.at.getTime()).toBeLessThan(1000);
    await expect.poll(() => page.locator("#status").textContent()).toBe("running");
    await page.screenshot({ path: path.join(RESULTS, "live-view.png"), fullPage: true });

    // Release the Bash command; the turn ends and the page shows its answer.
    const ws = await waitFor("the workspace", () => findWorkspace(stack.workspaces));
    fs.writeFileSync(path.join(ws, RELEASE), "go\n");
    const task = await stack.finishedTask(commentId, 150_000);
    expect(task.status).toBe("succeeded");
    await page.locator("li.result .answer", { hasText: ANSWER }).waitFor({ timeout: 30_000 });
    await expect
      .poll(() => page.locator("#status").textContent(), { timeout: 15_000 })
      .toBe("succeeded");
    expect(await page.locator("li.tool_use .tool-output").textContent()).toContain(
      "released-by-the-test",
    );
    await page.screenshot({ path: path.join(RESULTS, "live-view-done.png"), fullPage: true });

    // The page stays readable after the turn, from the same link.
    const again = await browser.newPage();
    await again.goto(link.url);
    await again.locator("li.result .answer", { hasText: ANSWER }).waitFor({ timeout: 15_000 });
    // The link opens that task only: the same signature on another task's page is refused.
    const other = await fetch(
      link.url.replace(`/live/${link.taskId}?`, `/live/${link.taskId + 1}?`),
    );
    expect(other.status).toBe(403);
    expect(errors).toEqual([]);
  }, 300_000);
});
