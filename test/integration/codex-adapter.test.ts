import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent, RunSpec } from "../../src/agent-cli/runtime-adapter.js";
import { createCodexCli } from "../../src/codex/codex-cli.js";
import { OPENAI_PLACEHOLDER } from "../../src/codex/model-endpoint.js";
import { findRollout } from "../../src/codex/rollout.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";
import {
  lastUserText,
  messages,
  replies,
  startFakeOpenAI,
  toolOutputs,
  type FakeOpenAI,
} from "../helpers/fake-openai.js";
import { resolveCodexBinary } from "../helpers/real-codex.js";

/*
 * The Codex adapter (src/codex/) running the real pinned Codex binary inside Tether's sandbox
 * (bubblewrap, the egress proxy holding the key) against the fake Responses API on 127.0.0.1.
 * Each run is one to two seconds of the CLI's start-up; limits are generous for a loaded machine.
 */

const MODEL = "gpt-5.5";
const KEY = "sk-real-openai-key-for-tests-0000";
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-codex-adapter-"));
const log = pino({ level: "silent" });
let fake: FakeOpenAI;
let sandbox: Sandbox;
let cli: ReturnType<typeof createCodexCli>;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(root, "sandbox"), log });
  expect(sandbox.status).toMatchObject({ ok: true });
  cli = createCodexCli({
    path: resolveCodexBinary(),
    log,
    baseEnv: {
      PATH: process.env.PATH,
      HOME: root,
      LANG: "C.UTF-8",
      OPENAI_API_KEY: KEY,
      OPENAI_BASE_URL: fake.url,
      GITHUB_TOKEN: "ghs_must_not_leak",
    },
  });
});
afterAll(async () => {
  await fake?.close();
  fs.rmSync(root, { recursive: true, force: true });
});
afterEach(() => {
  const left = fake.pending();
  fake.reset();
  expect(left).toBe(0);
});

let dirs = 0;
/** A workspace (a git repository, as Tether's are) and a HOME for one thread. */
function place(): { cwd: string; home: string } {
  const n = ++dirs;
  const cwd = path.join(root, `work-${n}`);
  const home = path.join(root, `home-${n}`);
  fs.mkdirSync(cwd);
  fs.mkdirSync(home);
  execFileSync("git", ["init", "-q"], { cwd });
  return { cwd, home };
}

function spec(p: { cwd: string; home: string }, over: Partial<RunSpec> = {}): RunSpec {
  return {
    cwd: p.cwd,
    home: p.home,
    prompt: "hello",
    settings: { model: MODEL, timeoutMs: 120_000, stallMs: 120_000 },
    sandbox: { sandbox, network: { kind: "model-only" } },
    ...over,
  };
}

const since = (n: number) => fake.responseRequests().slice(n);

describe("Codex adapter, real CLI in the sandbox", { timeout: 240_000 }, () => {
  it("a fresh turn: the thread id is the first event, the answer, usage priced from the model, the key swapped in by the proxy", async () => {
    const before = fake.responseRequests().length;
    fake.script(replies.text("FRESH-ANSWER"));
    const events: RunEvent[] = [];
    const run = cli.start(spec(place(), { onEvent: (e) => void events.push(e) }));
    const o = await run.outcome;
    expect(o).toMatchObject({ kind: "success", resultText: "FRESH-ANSWER", toolRan: false });
    expect(o.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(events[0]).toMatchObject({ type: "init", sessionId: o.sessionId, model: MODEL });
    const reqs = since(before);
    expect(reqs).toHaveLength(1);
    // The CLI held a placeholder; the API saw the operator's key.
    expect(reqs[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(reqs[0]!.body?.model).toBe(MODEL);
    const u = reqs[0]!.usage!;
    expect(o.usage.inputTokens + o.usage.cacheReadTokens).toBe(u.input_tokens);
    expect(o.usage.outputTokens).toBe(u.output_tokens);
    expect(o.usage.costUsd).toBeGreaterThan(0);
    expect(o.usage.contextWindow).toBeGreaterThan(100_000);
    expect(o.usage.contextTokens).toBe(u.input_tokens);
  });

  it("a resumed turn carries the earlier turns; its usage is its own, not the thread's running total", async () => {
    const p = place();
    const before = fake.responseRequests().length;
    fake.script(replies.text("FIRST-ANSWER"), replies.text("SECOND-ANSWER"));
    const first = await cli.start(spec(p, { prompt: "FIRST-QUESTION" })).outcome;
    expect(first.kind).toBe("success");
    const second = await cli.start(
      spec(p, { prompt: "SECOND-QUESTION", resumeSessionId: first.sessionId! }),
    ).outcome;
    expect(second).toMatchObject({
      kind: "success",
      sessionId: first.sessionId,
      resultText: "SECOND-ANSWER",
    });
    const [r1, r2] = since(before);
    const said = messages(r2!).map((m) => m.text);
    expect(said.some((t) => t.includes("FIRST-QUESTION"))).toBe(true);
    expect(said.some((t) => t.includes("FIRST-ANSWER"))).toBe(true);
    expect(lastUserText(r2!)).toContain("SECOND-QUESTION");
    // turn.completed says r1 + r2; the turn is r2 alone.
    expect(second.usage.inputTokens + second.usage.cacheReadTokens).toBe(r2!.usage!.input_tokens);
    expect(second.usage.cacheReadTokens).toBe(r2!.usage!.input_tokens_details.cached_tokens);
    expect(second.usage.cacheReadTokens).toBeGreaterThan(0);
    expect(first.usage.inputTokens + first.usage.cacheReadTokens).toBe(r1!.usage!.input_tokens);
  });

  it("an unknown thread id → resume_rejected, no request, no tool", async () => {
    const before = fake.responseRequests().length;
    const o = await cli.start(
      spec(place(), { resumeSessionId: "01a20d55-0000-7000-8000-000000000000" }),
    ).outcome;
    expect(o).toMatchObject({ kind: "resume_rejected", sessionId: undefined, toolRan: false });
    expect(o.detail).toContain("no rollout");
    expect(since(before)).toHaveLength(0);
  });

  it("a context overflow → poisoned, with the thread named", async () => {
    fake.script(replies.contextOverflow());
    const o = await cli.start(spec(place())).outcome;
    expect(o.kind).toBe("poisoned");
    expect(o.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(o.detail).toContain("context window");
  });

  it("a 401 → auth_failed at the first retry, not after five", async () => {
    const before = fake.responseRequests().length;
    fake.setDefault(replies.unauthorized());
    const o = await cli.start(spec(place())).outcome;
    expect(o.kind).toBe("auth_failed");
    expect(o.detail).toContain("401");
    expect(o.detail).toContain("OPENAI_API_KEY");
    expect(since(before).length).toBeLessThanOrEqual(3);
  });

  it("a shell command runs in the workspace; the agent sees the placeholder, not the key or Tether's tokens", async () => {
    const p = place();
    fake.script(
      replies.shell("pwd; touch made-by-agent; env | grep -E 'OPENAI|GITHUB' || true"),
      replies.text("DONE"),
    );
    const before = fake.responseRequests().length;
    const o = await cli.start(spec(p)).outcome;
    expect(o).toMatchObject({ kind: "success", toolRan: true, resultText: "DONE" });
    expect(fs.existsSync(path.join(p.cwd, "made-by-agent"))).toBe(true);
    const out = toolOutputs(since(before)[1]!)[0]!.output;
    expect(out).toContain("/workspace");
    expect(out).not.toContain(KEY);
    expect(out).not.toContain("ghs_must_not_leak");
    // Codex itself holds only the placeholder (its commands get no *KEY* variable at all).
    expect(out).not.toContain("OPENAI_API_KEY=sk-real");
    expect(OPENAI_PLACEHOLDER).not.toBe(KEY);
  });

  it("the thread's rollout is where the session store looks for it", async () => {
    const p = place();
    const o = await cli.start(spec(p)).outcome;
    expect(o.kind).toBe("success");
    const found = await findRollout(path.join(p.home, ".codex"), o.sessionId!);
    expect(found?.name).toMatch(new RegExp(`^rollout-.*-${o.sessionId}\\.jsonl$`));
  });
});
