import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/agent-cli/runtime-adapter.js";
import { createCodexCli } from "../../src/codex/codex-cli.js";
import { OPENAI_PLACEHOLDER } from "../../src/codex/model-endpoint.js";
import { findRollout } from "../../src/codex/rollout.js";
import {
  lastUserText,
  messages,
  replies,
  startFakeOpenAI,
  toolOutputs,
} from "../helpers/fake-openai.js";
import { adapterHarness } from "../helpers/adapter-harness.js";
import { resolveCodexBinary } from "../helpers/real-codex.js";

/*
 * The Codex adapter (src/codex/) running the real pinned Codex binary inside Tether's sandbox
 * (bubblewrap, the egress proxy holding the key) against the fake Responses API on 127.0.0.1.
 * Each run is one to two seconds of the CLI's start-up; limits are generous for a loaded machine.
 */

const MODEL = "gpt-5.5";
const KEY = "sk-real-openai-key-for-tests-0000";
const h = adapterHarness({
  name: "codex",
  model: MODEL,
  startFake: startFakeOpenAI,
  env: (fake) => ({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.url }),
  createCli: ({ log, baseEnv }) => createCodexCli({ path: resolveCodexBinary(), log, baseEnv }),
});
const { place, spec } = h;

const since = (n: number) => h.fake.responseRequests().slice(n);

describe("Codex adapter, real CLI in the sandbox", { timeout: 240_000 }, () => {
  it("a fresh turn: the thread id is the first event, the answer, usage priced from the model, the key swapped in by the proxy", async () => {
    const before = h.fake.responseRequests().length;
    h.fake.script(replies.text("FRESH-ANSWER"));
    const events: RunEvent[] = [];
    const run = h.cli.start(spec(place(), { onEvent: (e) => void events.push(e) }));
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
    const before = h.fake.responseRequests().length;
    h.fake.script(replies.text("FIRST-ANSWER"), replies.text("SECOND-ANSWER"));
    const first = await h.cli.start(spec(p, { prompt: "FIRST-QUESTION" })).outcome;
    expect(first.kind).toBe("success");
    const second = await h.cli.start(
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
    const o = await h.resumeUnknown(
      "01a20d55-0000-7000-8000-000000000000",
      () => h.fake.responseRequests().length,
    );
    expect(o.detail).toContain("no rollout");
  });

  it("a context overflow → poisoned, with the thread named", async () => {
    h.fake.script(replies.contextOverflow());
    const o = await h.overflowed();
    expect(o.sessionId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("a 401 → auth_failed at the first retry, not after five", async () => {
    const before = h.fake.responseRequests().length;
    h.fake.setDefault(replies.unauthorized());
    const o = await h.keyRefused("OPENAI_API_KEY");
    expect(o.detail).toContain("401");
    expect(since(before).length).toBeLessThanOrEqual(3);
  });

  it("a shell command runs in the workspace; the agent sees the placeholder, not the key or Tether's tokens", async () => {
    const p = place();
    h.fake.script(
      replies.shell("pwd; touch made-by-agent; env | grep -E 'OPENAI|GITHUB' || true"),
      replies.text("DONE"),
    );
    const before = h.fake.responseRequests().length;
    const o = await h.cli.start(spec(p)).outcome;
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
    const o = await h.cli.start(spec(p)).outcome;
    expect(o.kind).toBe("success");
    const found = await findRollout(path.join(p.home, ".codex"), o.sessionId!);
    expect(found?.name).toMatch(new RegExp(`^rollout-.*-${o.sessionId}\\.jsonl$`));
  });
});
