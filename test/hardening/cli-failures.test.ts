/**
 * Drill: the Claude CLI missing, crashing, hanging before it starts, or looping on 401. The built
 * app runs each way in turn (TETHER_CLAUDE_PATH at a missing file, at the stand-in told to crash
 * or to hang, or the real CLI against a Messages API that answers 401); each turn is classified
 * and the thread told what to do within 30 s of the claim.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { REPO, startStack, type Stack } from "../helpers/e2e-stack.js";
import { replies } from "../helpers/fake-anthropic.js";
import { STANDIN_CLAUDE, readStandinLog } from "./helpers/drill.js";

const db = await createTestDatabase();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-cli-drill-"));
const runLog = path.join(tmp, "runs.jsonl");
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ pool: db.pool, databaseUrl: db.url });
}, 120_000);
afterAll(async () => {
  await stack?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function restartWith(env: Record<string, string>): Promise<void> {
  await stack.app.stop();
  // The stand-in CLI runs in the sandbox; its log directory is the one host path it may write.
  await stack.startApp({ TETHER_SANDBOX_BIND: `${tmp}:rw`, ...env });
}

/** One comment on a new issue; the finished task, its one reply, and claim-to-reply seconds. */
async function turn(body: string) {
  const n = stack.gh.addIssue({ repo: REPO, title: "CLI trouble", body: "…", user: "alice" })
    .number as number;
  const task = await stack.finishedTask(await stack.comment(n, body), 60_000);
  const posted = stack.taskComments(n, task.id as number);
  expect(posted).toHaveLength(1);
  const seconds =
    ((task.finished_at as Date).getTime() - (task.started_at as Date).getTime()) / 1000;
  return { task, reply: String(posted[0]!.body), seconds };
}

describe("the Claude CLI failing", { timeout: 90_000 }, () => {
  it("looping on 401: stopped at the first retry, the operator told to check the key", async () => {
    stack.api.setDefault(replies.unauthorized());
    try {
      const { task, reply, seconds } = await turn("@tether do something");
      expect(task).toMatchObject({ status: "failed", outcome: "auth_failed" });
      expect(String(task.failure_reason)).toContain("check ANTHROPIC_API_KEY");
      expect(reply).toContain("The Claude API refused Tether's credentials (HTTP 401/403)");
      expect(reply).toContain("check the runner's `ANTHROPIC_API_KEY`");
      expect(seconds).toBeLessThan(30);
      // The CLI retries 401s ten times over minutes; it was stopped at the first.
      const unauthorized = stack.api.messageRequests().filter((r) => r.reply === "error");
      expect(unauthorized.length).toBeGreaterThanOrEqual(1);
      expect(unauthorized.length).toBeLessThanOrEqual(2);
    } finally {
      stack.api.reset();
    }
  });

  it("missing: the run fails at once and says how to point Tether at the CLI", async () => {
    await restartWith({ TETHER_CLAUDE_PATH: path.join(tmp, "no-such-claude") });
    const { task, reply, seconds } = await turn("@tether are you there");
    expect(task).toMatchObject({ status: "failed", outcome: "failed" });
    expect(reply).toContain(
      `could not start the Claude CLI at ${path.join(tmp, "no-such-claude")}: ENOENT; set TETHER_CLAUDE_PATH or install @anthropic-ai/claude-code`,
    );
    expect(reply).toContain("Comment again to retry");
    expect(seconds).toBeLessThan(30);
  });

  it("crashing: the run fails with the signal and the CLI's last words", async () => {
    await restartWith({
      TETHER_CLAUDE_PATH: STANDIN_CLAUDE,
      CLAUDE_CODE_STANDIN_MODE: "crash",
      CLAUDE_CODE_STANDIN_LOG: runLog,
    });
    const { task, reply, seconds } = await turn("@tether crash please");
    expect(task).toMatchObject({ status: "failed", outcome: "failed" });
    expect(reply).toContain("The run failed: the CLI was killed by SIGSEGV without a result line");
    expect(reply).toContain("stand-in CLI crashed on purpose");
    expect(reply).toContain("if it keeps failing, an operator can look up task");
    expect(seconds).toBeLessThan(30);
  });

  it("hanging before it starts: stopped by the start-up limit, the operator told what to check", async () => {
    await restartWith({
      TETHER_CLAUDE_PATH: STANDIN_CLAUDE,
      CLAUDE_CODE_STANDIN_MODE: "hang-before-init",
      CLAUDE_CODE_STANDIN_LOG: runLog,
    });
    const { task, reply, seconds } = await turn("@tether hang please");
    expect(task).toMatchObject({ status: "failed", outcome: "failed" });
    expect(reply).toContain(
      `the Claude CLI printed nothing in the 20 s after it started, so it was stopped; an operator should check that ${STANDIN_CLAUDE} --version runs on the runner`,
    );
    expect(seconds).toBeLessThan(30);
    // The hung process is gone: it ran (it logged), and nothing the app started is left.
    expect(readStandinLog(runLog).at(-1)?.mode).toBe("hang-before-init");
    expect(stack.app.descendants()).toEqual([]);
  });
});
