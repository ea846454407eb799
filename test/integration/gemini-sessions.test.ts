/**
 * Gemini CLI through the runner's Agent (runner/cli-agent.ts) as start-runner wires each CLI:
 * the real CLI in the sandbox against the fake Gemini API, a fresh HOME per turn, the session
 * file saved to Postgres after each turn (geminiLayout) and restored on another runner, whose
 * turn then resumes the session with the earlier messages at the API.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGeminiCli, resolveGeminiPath } from "../../src/gemini/gemini-cli.js";
import { createLogger } from "../../src/log.js";
import { cliAgent } from "../../src/runner/wiring/cli-agent.js";
import type { AgentRunRequest } from "../../src/runner/ports.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";
import { geminiLayout } from "../../src/gemini/session-layout.js";
import { postgresTranscripts } from "../../src/sessions/postgres-transcripts.js";
import { upsertSession } from "../../src/sql/sessions.js";
import { transcriptHead } from "../../src/sql/transcripts.js";
import { createTestDatabase } from "../helpers/db.js";
import {
  geminiReplies as replies,
  startFakeGemini,
  type FakeGemini,
} from "../helpers/fake-gemini.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
const log = createLogger("silent");
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-gemini-sessions-"));
const MODEL = "gemini-2.5-flash";
let fake: FakeGemini;
let sandbox: Sandbox;

beforeAll(async () => {
  fake = await startFakeGemini();
  sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(root, "sandbox"), log });
  expect(sandbox.status).toMatchObject({ ok: true });
});
afterAll(async () => {
  await fake?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** One runner: its own cache directory and HOMEs, the shared Postgres store. */
function runner(name: string) {
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  const cli = createGeminiCli({
    path: resolveGeminiPath({}),
    log,
    baseEnv: {
      PATH: process.env.PATH,
      HOME: dir,
      GEMINI_API_KEY: "AIza-test-key",
      GOOGLE_GEMINI_BASE_URL: fake.url,
    },
  });
  return cliAgent(cli, {
    log,
    contain: {
      sandbox,
      homes: path.join(dir, "homes"),
      transcripts: postgresTranscripts({
        pool: db.pool,
        cacheRoot: path.join(dir, "sessions"),
        log,
        maxBytes: 64 * 1024 * 1024,
        cliVersion: async () => (await cli.probe()).version,
        layout: geminiLayout,
      }),
    },
  });
}

const cwd = path.join(root, "work");
fs.mkdirSync(cwd);
execFileSync("git", ["init", "-q"], { cwd });
const key = { repoId: repoIdOf("octo/gemini"), repo: "octo/gemini", issueNumber: 1, agent: "gem" };

function request(over: Partial<AgentRunRequest>): AgentRunRequest {
  return {
    key,
    cwd,
    prompt: "hello",
    resumeSessionId: null,
    settings: { name: "gem", cli: "gemini", model: MODEL, timeoutMinutes: 5, stallMinutes: 5 },
    systemPrompt: "TETHER-SYSTEM-PROMPT",
    signal: new AbortController().signal,
    onSession: () => {},
    onProgress: () => {},
    ...over,
  };
}

describe("Gemini sessions through the runner's Agent and Postgres", { timeout: 240_000 }, () => {
  it("pins the session mid-turn, saves it to Postgres, and another runner resumes it from there", async () => {
    const a = runner("a");
    const b = runner("b");
    fake.script(replies.text("FIRST-ANSWER"), replies.text("SECOND-ANSWER"));
    const pinned: string[] = [];
    const answeredWhenPinned: number[] = [];
    const before = fake.turnRequests().length;
    const first = await a.run(
      request({
        prompt: "FIRST-QUESTION",
        onSession: async (id) => {
          // The moment the CLI reports it, before the model has answered.
          pinned.push(id);
          answeredWhenPinned.push(fake.turnRequests().length - before);
          await upsertSession(db.pool, {
            cli: "claude",
            ...key,
            sessionId: id,
            runtimeId: "rt-a",
            workDir: cwd,
            model: MODEL,
            historyEpoch: 0,
          });
        },
      }),
    );
    expect(first).toMatchObject({ outcome: "success", text: "FIRST-ANSWER" });
    expect(pinned).toEqual([first.sessionId]);
    // A throw in onSession is only logged: what it saw is asserted here.
    expect(answeredWhenPinned).toEqual([0]);
    // Tether's system prompt rode along after the prompt.
    const r1 = fake.turnRequests().at(-1)!;
    expect(JSON.stringify(r1.body?.contents)).toContain("TETHER-SYSTEM-PROMPT");
    const head = await transcriptHead(db.pool, key, first.sessionId!);
    expect(head?.fileName).toMatch(/^session-.*\.jsonl$/);
    expect(head?.cliVersion).toBe("0.61.0");

    const second = await b.run(
      request({ prompt: "SECOND-QUESTION", resumeSessionId: first.sessionId }),
    );
    expect(second).toMatchObject({
      outcome: "success",
      sessionId: first.sessionId,
      text: "SECOND-ANSWER",
      restored: { from: "store" },
    });
    const sent = JSON.stringify(fake.turnRequests().at(-1)!.body?.contents);
    expect(sent).toContain("FIRST-QUESTION");
    expect(sent).toContain("FIRST-ANSWER");
    expect(sent).toContain("SECOND-QUESTION");
  });

  it("a session the store does not hold → resume_rejected (the runner then retires it and starts fresh)", async () => {
    const before = fake.turnRequests().length;
    const r = await runner("c").run(
      request({ resumeSessionId: "0b9e1a52-1111-4222-8333-444444444444" }),
    );
    expect(r.outcome).toBe("resume_rejected");
    expect(fake.turnRequests().length).toBe(before);
  });
});
