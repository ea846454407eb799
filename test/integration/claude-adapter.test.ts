import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createClaudeCli } from "../../src/claude/claude-cli.js";
import { OUT_OF_TURN_TOOLS } from "../../src/claude/claude-args.js";
import { readProcTable } from "../../src/process/process-tree.js";
import type { RunEvent, RunSpec } from "../../src/agent-cli/runtime-adapter.js";
import { FIXTURES } from "../helpers/fake-claude-replay.js";

/*
 * The adapter's process handling, driven by a scripted stand-in CLI (standin-claude.mjs) for what
 * the real CLI cannot be made to do on demand. claude-cli.test.ts runs the real one.
 */

const FAKE = path.resolve(import.meta.dirname, "../helpers/standin-claude.mjs");
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-adapter-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const options = {
  path: FAKE,
  baseEnv: {
    PATH: process.env.PATH,
    HOME: root,
    GITHUB_TOKEN: "ghs_must_not_leak",
    ANTHROPIC_API_KEY: "sk-test",
  },
  killGraceMs: 800,
  afterResultGraceMs: 500,
  sampleIntervalMs: 100,
};
const cli = createClaudeCli(options);

const settings = { timeoutMs: 20_000, stallMs: 20_000 };
let dirs = 0;
function spec(
  scenario: string,
  over: Partial<RunSpec> = {},
  env: Record<string, string> = {},
): RunSpec {
  const cwd = path.join(root, `run-${++dirs}`);
  fs.mkdirSync(cwd);
  return {
    cwd,
    prompt: "hello",
    settings,
    ...over,
    extraEnv: {
      CLAUDE_CODE_STANDIN_MODE: scenario,
      CLAUDE_CODE_STANDIN_SESSION: "11111111-2222-4333-8444-555555555555",
      ...env,
      ...over.extraEnv,
    },
  };
}

function alive(pid: number): boolean {
  return readProcTable().some((p) => p.pid === pid && p.state !== "Z");
}

describe("Claude adapter with a scripted CLI", () => {
  it("sends a large prompt on stdin and reads the answer", async () => {
    const prompt = "p".repeat(300_000);
    const outcome = await cli.start(spec("answer", { prompt })).outcome;
    expect(outcome).toMatchObject({
      kind: "success",
      sessionId: "11111111-2222-4333-8444-555555555555",
      resultText: "stand-in answer (fresh) to 300000 bytes",
      toolRan: false,
      exitCode: 0,
      signal: null,
      unreadableLines: 0,
    });
  });

  it("passes the settings as arguments and nothing else", async () => {
    const outcome = await cli.start(
      spec("echo-args", {
        resumeSessionId: "11111111-2222-4333-8444-555555555555",
        settings: {
          ...settings,
          model: "claude-sonnet-4-5",
          maxTurns: 3,
          allowedTools: ["Bash(git log:*)"],
        },
      }),
    ).outcome;
    expect(JSON.parse(outcome.resultText!)).toEqual([
      "-p",
      "--output-format",
      "stream-json",
      "--verbose",
      "--setting-sources",
      "",
      "--strict-mcp-config",
      "--model",
      "claude-sonnet-4-5",
      "--resume",
      "11111111-2222-4333-8444-555555555555",
      "--max-turns",
      "3",
      "--allowedTools",
      "Bash(git log:*)",
      "--disallowedTools",
      ...OUT_OF_TURN_TOOLS,
    ]);
  });

  it("gives the child the allowed environment only", async () => {
    const outcome = await cli.start(spec("echo-env", { home: path.join(root, "h") })).outcome;
    const env = JSON.parse(outcome.resultText!) as Record<string, string>;
    expect(env.ANTHROPIC_API_KEY).toBe("sk-test");
    expect(env.HOME).toBe(path.join(root, "h"));
    expect(env.DISABLE_AUTOUPDATER).toBe("1");
    expect(env).not.toHaveProperty("GITHUB_TOKEN");
    expect(JSON.stringify(env)).not.toContain("ghs_must_not_leak");
  });

  it("reads on past unreadable, unknown and overlong lines, and counts them", async () => {
    const small = createClaudeCli({
      path: FAKE,
      baseEnv: { PATH: process.env.PATH },
      maxLineBytes: 4096,
    });
    const outcome = await small.start(spec("garbage", {}, { CLAUDE_CODE_STANDIN_HUGE: "100000" }))
      .outcome;
    expect(outcome.kind).toBe("success");
    expect(outcome.resultText).toBe("done despite garbage");
    // not json, array, no type, bad assistant, the 100 kB line, the half line
    expect(outcome.unreadableLines).toBe(6);
    expect(outcome.unknownLines).toBe(2); // stream_event, system/hook_started
  });

  it("a run that ends without a result line failed, with its stderr", async () => {
    const outcome = await cli.start(spec("no-result")).outcome;
    expect(outcome).toMatchObject({ kind: "failed", exitCode: 3 });
    expect(outcome.detail).toMatch(
      /exited with code 3 without a result line; stderr: something went wrong/,
    );
    expect(outcome.stderrTail).toContain("something went wrong inside");
  });

  it("a CLI that ignores SIGTERM gets SIGKILL after the grace period", async () => {
    const run = cli.start(spec("ignore-term"));
    const init = await firstEvent(run, "init");
    expect(init.sessionId).toBeTruthy();
    const t0 = Date.now();
    run.cancel("/cancel by octocat");
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ kind: "cancelled", signal: "SIGKILL" });
    expect(outcome.detail).toBe("cancelled: /cancel by octocat");
    expect(outcome.stderrTail).toContain("ignoring SIGTERM");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(700);
    expect(alive(run.pid!)).toBe(false);
  });

  it("a cancelled run leaves no process behind, not even one in its own session", async () => {
    const pidFile = path.join(root, "grandchild.pid");
    const run = cli.start(spec("grandchild", {}, { CLAUDE_CODE_STANDIN_PIDFILE: pidFile }));
    await firstEvent(run, "init");
    const grandchild = Number(fs.readFileSync(pidFile, "utf8"));
    const entry = readProcTable().find((p) => p.pid === grandchild);
    expect(entry?.sid).not.toBe(run.pid); // it left the CLI's session and group
    await new Promise((r) => setTimeout(r, 250)); // the tracker samples every 100 ms here
    run.cancel();
    expect((await run.outcome).kind).toBe("cancelled");
    expect(alive(run.pid!)).toBe(false);
    expect(alive(grandchild)).toBe(false);
  });

  it("an AbortSignal cancels; an aborted one never starts the CLI", async () => {
    const controller = new AbortController();
    const run = cli.start(spec("silent", { signal: controller.signal }));
    await firstEvent(run, "init");
    controller.abort(new Error("task cancelled in the database"));
    expect(await run.outcome).toMatchObject({
      kind: "cancelled",
      detail: "cancelled: task cancelled in the database",
    });

    const before = cli.start(spec("answer", { signal: AbortSignal.abort() }));
    expect(before.pid).toBeUndefined();
    expect((await before.outcome).kind).toBe("cancelled");
  });

  it("stalled: no output for stallMs", async () => {
    const t0 = Date.now();
    const outcome = await cli.start(
      spec("silent", { settings: { timeoutMs: 20_000, stallMs: 600 } }),
    ).outcome;
    expect(outcome.kind).toBe("stalled");
    expect(outcome.detail).toMatch(/600 ms without any output/);
    expect(outcome.sessionId).toBe("11111111-2222-4333-8444-555555555555");
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it("timed out: the wall clock ran out", async () => {
    const hung = await cli.start(spec("silent", { settings: { timeoutMs: 700, stallMs: 20_000 } }))
      .outcome;
    expect(hung.kind).toBe("timed_out");
    expect(hung.detail).toMatch(/wall-clock limit of 700 ms/);
  });

  it("a CLI that lingers after its answer is stopped, and the answer stands", async () => {
    const t0 = Date.now();
    const outcome = await cli.start(spec("linger")).outcome;
    expect(outcome).toMatchObject({ kind: "success", resultText: "answered but lingering" });
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it("replayed 401 retries stop the run at the first retry", async () => {
    const t0 = Date.now();
    const outcome = await cli.start(
      spec(
        "replay",
        {},
        {
          CLAUDE_CODE_STANDIN_REPLAY: path.join(
            FIXTURES,
            "claude-code-2.1.197/auth-failure-retrying-killed-at-60s.jsonl",
          ),
          CLAUDE_CODE_STANDIN_THEN_HANG: "1",
        },
      ),
    ).outcome;
    expect(outcome.kind).toBe("auth_failed");
    expect(outcome.sessionId).toBe("12f66f5b-1ad3-4d3e-8766-7908e6100af8");
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it("replayed unknown-session resume is rejected", async () => {
    const id = "00000000-0000-4000-8000-000000000000";
    const outcome = await cli.start(
      spec(
        "replay",
        { resumeSessionId: id },
        {
          CLAUDE_CODE_STANDIN_REPLAY: path.join(
            FIXTURES,
            "claude-code-2.1.197/resume-unknown-session.jsonl",
          ),
          CLAUDE_CODE_STANDIN_STDERR: `No conversation found with session ID: ${id}\n`,
          CLAUDE_CODE_STANDIN_EXIT: "1",
        },
      ),
    ).outcome;
    expect(outcome).toMatchObject({
      kind: "resume_rejected",
      sessionId: undefined,
      exitCode: 1,
      toolRan: false,
    });
  });

  it("an init for another session on a resume: stopped, not reported as the run's session", async () => {
    const events: RunEvent[] = [];
    const outcome = await cli.start(
      spec("silent", {
        resumeSessionId: "99999999-2222-4333-8444-555555555555",
        onEvent: (e) => void events.push(e),
      }),
    ).outcome;
    expect(outcome.kind).toBe("resume_rejected");
    expect(outcome.detail).toMatch(/started session 11111111/);
    expect(outcome.sessionId).toBeUndefined();
    expect(events.filter((e) => e.type === "init")).toEqual([]);
  });

  it("bad input never throws: settings, session id, working directory, binary", async () => {
    const bad = await cli.start({ ...spec("answer"), settings: { timeoutMs: -1, stallMs: 1 } })
      .outcome;
    expect(bad).toMatchObject({ kind: "failed" });
    expect(bad.detail).toMatch(/invalid agent settings.*timeoutMs/s);

    const id = await cli.start(spec("answer", { resumeSessionId: "--fork-session" })).outcome;
    expect(id.kind).toBe("resume_rejected");

    const nodir = await cli.start({ ...spec("answer"), cwd: path.join(root, "missing") }).outcome;
    expect(nodir.detail).toMatch(/working directory .*missing does not exist/);

    const nobin = await createClaudeCli({ path: path.join(root, "no-claude") }).start(
      spec("answer"),
    ).outcome;
    expect(nobin.kind).toBe("failed");
    expect(nobin.detail).toMatch(
      /could not start the Claude CLI at .*no-claude: ENOENT.*TETHER_CLAUDE_PATH/,
    );
  });

  it("a failing onEvent handler does not stop the run; a slow one delays reading, not the verdict", async () => {
    const seen: string[] = [];
    const outcome = await cli.start(
      spec("answer", {
        onEvent: async (e) => {
          seen.push(e.type);
          if (e.type === "init") {
            await new Promise((r) => setTimeout(r, 200));
            throw new Error("database down");
          }
        },
      }),
    ).outcome;
    expect(outcome.kind).toBe("success");
    expect(seen).toEqual(["init", "usage", "text", "result"]);
  });

  it("a slow onEvent loses no output, even after the CLI has exited", async () => {
    // The CLI writes everything and exits while the handler still holds the first event.
    let texts = 0;
    const outcome = await cli.start(
      spec("burst", {
        onEvent: async (e) => {
          if (e.type === "init") await new Promise((r) => setTimeout(r, 2600));
          if (e.type === "text") texts++;
        },
      }),
    ).outcome;
    expect(outcome).toMatchObject({ kind: "success", resultText: "after the burst" });
    expect(texts).toBe(2000);

    const small = await cli.start(
      spec("answer", {
        settings: { timeoutMs: 20_000, stallMs: 1000 },
        onEvent: async (e) => {
          if (e.type === "init") await new Promise((r) => setTimeout(r, 2600));
        },
      }),
    ).outcome;
    // Neither lost (the result line sat in the pipe) nor stalled (the wait was ours).
    expect(small.kind).toBe("success");
    // 2000 events and two 2.6 s waits in a handler: minutes on a loaded 2-core machine, not seconds.
  }, 120_000);

  it("events iterate in order and end with the run, even when iterated late", async () => {
    const run = cli.start(spec("answer"));
    await run.outcome;
    const types: string[] = [];
    for await (const e of run.events) types.push(e.type);
    expect(types).toEqual(["init", "usage", "text", "result"]);
  });

  it("cancelAll stops every run and waits for them", async () => {
    // A CLI of its own: its count is exact whatever an earlier test left running.
    const cli = createClaudeCli(options);
    const runs = [cli.start(spec("silent")), cli.start(spec("ignore-term"))];
    await Promise.all(runs.map((r) => firstEvent(r, "init")));
    expect(cli.activeRuns()).toBe(2);
    await cli.cancelAll("shutdown");
    expect(cli.activeRuns()).toBe(0);
    for (const r of runs) {
      expect((await r.outcome).kind).toBe("cancelled");
      expect(alive(r.pid!)).toBe(false);
    }
  });
});

async function firstEvent<T extends RunEvent["type"]>(
  run: AsyncIterable<RunEvent>,
  type: T,
): Promise<Extract<RunEvent, { type: T }>> {
  for await (const e of run) if (e.type === type) return e as Extract<RunEvent, { type: T }>;
  throw new Error(`the run ended without a ${type} event`);
}
