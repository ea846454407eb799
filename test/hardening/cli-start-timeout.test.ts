/**
 * The adapter's start-up limit: a CLI that prints nothing at all is stopped after
 * `startTimeoutMs`, with a failure that says what to check; one that printed its init line and
 * then takes its time is not.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createClaudeCli } from "../../src/claude/claude-cli.js";
import { readProcTable } from "../../src/process/process-tree.js";
import { STANDIN_CLAUDE } from "./helpers/drill.js";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-cli-start-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const cli = (mode: string, extra: Record<string, string> = {}) =>
  createClaudeCli({
    path: STANDIN_CLAUDE,
    baseEnv: { PATH: process.env.PATH, HOME: root, CLAUDE_CODE_STANDIN_MODE: mode, ...extra },
    startTimeoutMs: 800,
    killGraceMs: 500,
    sampleIntervalMs: 100,
  });
const settings = { timeoutMs: 20_000, stallMs: 20_000 };

describe("the CLI's start-up limit", { timeout: 20_000 }, () => {
  it("stops a CLI that prints nothing, and says what to check", async () => {
    const started = Date.now();
    const run = cli("hang-before-init").start({ cwd: root, prompt: "hi", settings });
    const outcome = await run.outcome;
    expect(outcome.kind).toBe("failed");
    expect(outcome.detail).toBe(
      `the Claude CLI printed nothing in the 1 s after it started, so it was stopped; an operator should check that ${STANDIN_CLAUDE} --version runs on the runner`,
    );
    expect(Date.now() - started).toBeLessThan(5000);
    expect(readProcTable().some((p) => p.pid === run.pid && p.state !== "Z")).toBe(false);
  });

  it("leaves alone a CLI that started and is slow to answer", async () => {
    const outcome = await cli("answer", { CLAUDE_CODE_STANDIN_DELAY_MS: "1500-1500" }).start({
      cwd: root,
      prompt: "hi",
      settings,
    }).outcome;
    expect(outcome).toMatchObject({
      kind: "success",
      resultText: expect.stringMatching(/^stand-in answer/),
    });
  });
});
