import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createClaudeCli } from "../../src/claude/claude-cli.js";
import { readProcTable } from "../../src/process/process-tree.js";
import type { CliAdapter, RunEvent, RunSpec } from "../../src/agent-cli/runtime-adapter.js";
import {
  lastUserText,
  replies,
  startFakeAnthropic,
  userTexts,
  type FakeAnthropic,
} from "../helpers/fake-anthropic.js";

/*
 * The real Claude Code CLI (the pinned @anthropic-ai/claude-code native binary, or the one
 * TETHER_CLAUDE_PATH names: `npm run test:cli`) against a fake Messages API on 127.0.0.1. Each
 * run takes about a second of the CLI's own start-up.
 */

/** The version the probe must report: the pin in package.json, unless another CLI is tested. */
const PINNED = (
  JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    devDependencies: Record<string, string>;
  }
).devDependencies["@anthropic-ai/claude-code"]!;
const EXPECTED_VERSION = process.env.TETHER_CLAUDE_PATH
  ? expect.stringMatching(/^\d+\.\d+\.\d+/)
  : PINNED;

const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-claude-"));
const home = path.join(root, "home"); // one $HOME: sessions live in $HOME/.claude/projects
fs.mkdirSync(home);
let fake: FakeAnthropic;
let cli: CliAdapter;
const MODEL = "claude-sonnet-4-5";
const settings = { model: MODEL, timeoutMs: 60_000, stallMs: 30_000 };

beforeAll(async () => {
  fake = await startFakeAnthropic();
  cli = createClaudeCli({
    baseEnv: {
      PATH: process.env.PATH,
      HOME: home,
      ANTHROPIC_API_KEY: "sk-test",
      ANTHROPIC_BASE_URL: fake.url,
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      // What a Tether process holds and the agent must never see.
      GITHUB_TOKEN: "ghs_secret_installation_token",
      PRIVATE_KEY: "-----BEGIN RSA PRIVATE KEY-----secret",
      WEBHOOK_SECRET: "whsec_secret",
      DATABASE_URL: "postgres://tether:pw_secret@db/tether",
    },
    killGraceMs: 2000,
    sampleIntervalMs: 200,
  });
});
afterAll(async () => {
  await cli?.cancelAll("test teardown");
  await fake?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

// A scripted reply left over would be answered to the next test's CLI instead.
afterEach(() => expect(fake.pending()).toBe(0));

let dirs = 0;
function workDir(): string {
  const dir = path.join(root, `work-${++dirs}`);
  fs.mkdirSync(dir);
  return dir;
}

function spec(over: Partial<RunSpec>): RunSpec {
  return { cwd: over.cwd ?? workDir(), prompt: "hello", settings, home, ...over };
}

/** Live processes of a run: in its group or session, or working in its directory. */
function processesOf(pid: number, cwd: string): number[] {
  return readProcTable()
    .filter((p) => p.state !== "Z")
    .filter((p) => {
      if (p.pgid === pid || p.sid === pid || p.pid === pid) return true;
      try {
        return fs.readlinkSync(`/proc/${p.pid}/cwd`).startsWith(cwd);
      } catch {
        return false;
      }
    })
    .map((p) => p.pid);
}

describe("Claude CLI adapter, real CLI", () => {
  it("probes the binary: its version, and that it can resume", async () => {
    const caps = await cli.probe();
    expect(caps).toMatchObject({ version: EXPECTED_VERSION, canResume: true });
    expect(await cli.probe()).toBe(caps);
  });

  let first: { sessionId: string; cwd: string };

  it("a fresh turn: init event with the session id first, then the answer", async () => {
    const cwd = workDir();
    const events: RunEvent[] = [];
    const outcome = await cli.start(
      spec({ cwd, prompt: "What does widgets do?", onEvent: (e) => void events.push(e) }),
    ).outcome;

    expect(outcome.kind).toBe("success");
    expect(events[0]).toMatchObject({
      type: "init",
      sessionId: outcome.sessionId,
      model: MODEL,
      cwd,
    });
    expect(events.at(-1)).toMatchObject({ type: "result", isError: false });
    const request = fake.messageRequests().at(-1)!;
    expect(request.body?.model).toBe(MODEL);
    expect(request.body?.messages).toHaveLength(1);
    expect(lastUserText(request)).toContain("What does widgets do?");
    expect(outcome.resultText).toBe(`reply#${request.n} seen_messages=1`);
    expect(outcome.usage).toMatchObject({ model: MODEL, numTurns: 1, contextWindow: 200000 });
    expect(outcome.usage.cacheCreationTokens).toBeGreaterThan(1000);
    expect(outcome.usage.contextTokens).toBeGreaterThan(1000);
    expect(outcome.usage.costUsd).toBeGreaterThan(0);
    expect(outcome.toolRan).toBe(false);
    first = { sessionId: outcome.sessionId!, cwd };
  });

  it("a resumed turn in the same cwd and HOME: same session, the API saw the earlier messages", async () => {
    const outcome = await cli.start(
      spec({ cwd: first.cwd, resumeSessionId: first.sessionId, prompt: "And the follow-up?" }),
    ).outcome;
    expect(outcome).toMatchObject({ kind: "success", sessionId: first.sessionId });
    const request = fake.messageRequests().at(-1)!;
    expect(request.body?.messages).toHaveLength(3);
    const texts = userTexts(request);
    expect(texts[0]).toContain("What does widgets do?");
    expect(texts.at(-1)).toContain("And the follow-up?");
    expect(outcome.resultText).toBe(`reply#${request.n} seen_messages=3`);
    // Same model, same prefix: the resumed turn reads the cache the fresh one wrote.
    expect(outcome.usage.cacheReadTokens).toBeGreaterThan(1000);
  });

  it("an unknown session id → resume_rejected, no tool ran", async () => {
    const before = fake.messageRequests().length;
    const outcome = await cli.start(
      spec({ resumeSessionId: "00000000-0000-4000-8000-000000000000" }),
    ).outcome;
    expect(outcome).toMatchObject({
      kind: "resume_rejected",
      toolRan: false,
      sessionId: undefined,
      exitCode: 1,
    });
    expect(outcome.detail).toMatch(/no conversation 00000000-0000-4000-8000-000000000000/);
    expect(fake.messageRequests().length).toBe(before);
  });

  it("a known session resumed from another directory of the same HOME: resumed (2.1.332)", async () => {
    // 2.1.197 looked only under the new cwd's project directory and failed ("No conversation
    // found"); 2.1.332 finds the file under any project directory of $HOME and appends to it.
    // Tether gives every turn a HOME holding only the session it resumes, so no other
    // session can be found this way.
    const outcome = await cli.start(
      spec({ resumeSessionId: first.sessionId, prompt: "From elsewhere?" }),
    ).outcome;
    expect(outcome).toMatchObject({ kind: "success", sessionId: first.sessionId });
    const texts = userTexts(fake.messageRequests().at(-1)!);
    expect(texts[0]).toContain("What does widgets do?");
    expect(texts.at(-1)).toContain("From elsewhere?");
  });

  it("a 400 prompt too long → poisoned, the session named", async () => {
    fake.script(replies.promptTooLong());
    const outcome = await cli.start(spec({})).outcome;
    expect(outcome.kind).toBe("poisoned");
    expect(outcome.detail).toMatch(/prompt_too_long/);
    expect(outcome.sessionId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("a 401 → auth_failed within 10 s, not after ten retries", async () => {
    fake.setDefault(replies.unauthorized());
    try {
      const t0 = Date.now();
      const outcome = await cli.start(spec({})).outcome;
      expect(outcome.kind).toBe("auth_failed");
      expect(outcome.detail).toMatch(/HTTP 401.*ANTHROPIC_API_KEY/);
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      fake.setDefault((req) =>
        replies.text(`reply#${req.n} seen_messages=${req.body?.messages?.length ?? 0}`),
      );
    }
  });

  it("a tool call runs (Bash), and the agent's environment holds none of Tether's secrets", async () => {
    fake.script(replies.toolUse("Bash", { command: "env", description: "Show the environment" }));
    const events: RunEvent[] = [];
    const outcome = await cli.start(
      spec({
        settings: { ...settings, allowedTools: ["Bash"] },
        onEvent: (e) => void events.push(e),
      }),
    ).outcome;
    expect(outcome).toMatchObject({ kind: "success", toolRan: true });
    // Each model call's tokens and cost so far (`usage`, for the live view) come before its blocks.
    expect(events.map((e) => e.type)).toEqual([
      "init",
      "usage",
      "tool_use",
      "tool_result",
      "usage",
      "text",
      "result",
    ]);
    expect(events[2]).toMatchObject({ type: "tool_use", name: "Bash", input: { command: "env" } });
    expect(events[3]).toMatchObject({ type: "tool_result", isError: false });
    expect((events[3] as { output?: string }).output).toContain("ANTHROPIC_BASE_URL");

    // The tool's output went back to the model: that is what the agent could see.
    const toolOutput = JSON.stringify(fake.messageRequests().at(-1)!.body?.messages?.at(-1));
    expect(toolOutput).toContain("ANTHROPIC_BASE_URL");
    for (const secret of [
      "ghs_secret",
      "BEGIN RSA",
      "whsec_secret",
      "pw_secret",
      "GITHUB_TOKEN",
      "DATABASE_URL",
    ]) {
      expect(toolOutput).not.toContain(secret);
    }
  });

  it("the session id arrives before the run ends", async () => {
    fake.script(replies.hang());
    let settled = false;
    const run = cli.start(spec({}));
    void run.outcome.then(() => (settled = true));
    let pinned: string | undefined;
    for await (const e of run) {
      if (e.type === "init") {
        pinned = e.sessionId;
        break;
      }
    }
    expect(pinned).toMatch(/^[0-9a-f-]{36}$/);
    expect(settled).toBe(false);
    await fake.waitFor((reqs) => reqs.at(-1)?.reply === "hang");
    expect(settled).toBe(false);
    run.cancel("test is done");
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ kind: "cancelled", sessionId: pinned });
  });

  it("a hanging API + cancel → cancelled, and no process of the run is left", async () => {
    fake.script(replies.hang());
    const cwd = workDir();
    const run = cli.start(spec({ cwd }));
    for await (const e of run) if (e.type === "init") break;
    await fake.waitFor((reqs) => reqs.at(-1)?.reply === "hang");
    expect(processesOf(run.pid!, cwd).length).toBeGreaterThan(0);
    run.cancel();
    const outcome = await run.outcome;
    expect(outcome.kind).toBe("cancelled");
    expect(processesOf(run.pid!, cwd)).toEqual([]);
  });

  it("cancel while a Bash command runs → its command, in a session of its own, is gone too", async () => {
    // Not a bare `sleep 300`: 2.1.332's Bash tool refuses a standalone sleep ("Blocked:
    // standalone sleep 300. To wait for a condition, use Monitor …") and never runs it.
    fake.script(
      replies.toolUse("Bash", { command: "tail -f /dev/null", description: "Follow nothing" }),
    );
    const cwd = workDir();
    const run = cli.start(spec({ cwd, settings: { ...settings, allowedTools: ["Bash"] } }));
    for await (const e of run) if (e.type === "tool_use") break;
    // Wait for the command to start, and check it really left the CLI's session.
    let sleeper: number | undefined;
    for (let i = 0; i < 100 && sleeper === undefined; i++) {
      sleeper = readProcTable().find((p) => {
        try {
          return (
            fs.readFileSync(`/proc/${p.pid}/cmdline`, "utf8") ===
            "tail\u0000-f\u0000/dev/null\u0000"
          );
        } catch {
          return false;
        }
      })?.pid;
      if (sleeper === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    expect(sleeper).toBeDefined();
    expect(readProcTable().find((p) => p.pid === sleeper)?.sid).not.toBe(run.pid);
    await new Promise((r) => setTimeout(r, 300)); // let the tracker see it

    run.cancel();
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ kind: "cancelled", toolRan: true });
    // Signalled is not yet gone: on a loaded machine a killed process may wait to be scheduled
    // before it exits. Gone within seconds, not hanging on for its 300 s.
    const gone = async (what: string, check: () => boolean) => {
      for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(check(), what).toBe(true);
    };
    await gone("the CLI's processes", () => processesOf(run.pid!, cwd).length === 0);
    await gone(
      "the sleeper",
      () => !readProcTable().some((p) => p.pid === sleeper && p.state !== "Z"),
    );
  });

  it("stalled: a hanging API and no output for stallMs", async () => {
    fake.script(replies.hang());
    const outcome = await cli.start(spec({ settings: { ...settings, stallMs: 1500 } })).outcome;
    expect(outcome.kind).toBe("stalled");
    expect(outcome.sessionId).toBeDefined();
  });

  it("bypassPermissions: refused as root (a clear failure), allowed otherwise", async () => {
    const outcome = await cli.start(
      spec({ settings: { ...settings, permissionMode: "bypassPermissions" } }),
    ).outcome;
    if (process.getuid?.() === 0) {
      expect(outcome.kind).toBe("failed");
      expect(outcome.detail).toMatch(/refused its arguments.*root\/sudo/);
    } else {
      expect(outcome.kind).toBe("success");
    }
  });
});
