/**
 * A `cli: gemini` agent through the runner's whole turn (runTask) with the real Gemini CLI in
 * the sandbox against the fake Gemini API, as start-runner wires it (agentForClis, cliAgent,
 * the Postgres session store with geminiLayout): the session is recorded as Gemini's; a
 * follow-up resumes it; a session the store lost is rejected by the CLI, retired, and the turn
 * retried fresh; an overflowing session is answered in the same turn, fresh; `/cancel` stops a
 * run. GitHub and the workspace are the narrow fakes of run-task.test.ts.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGeminiCli, resolveGeminiPath } from "../../src/gemini/gemini-cli.js";
import { createLogger } from "../../src/log.js";
import { agentForClis } from "../../src/runner/wiring/agent-clis.js";
import { cliAgent } from "../../src/runner/wiring/cli-agent.js";
import { runTask } from "../../src/runner/turn/run-task.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";
import { geminiLayout } from "../../src/gemini/session-layout.js";
import { postgresTranscripts } from "../../src/sessions/postgres-transcripts.js";
import { claimTasks } from "../../src/sql/tasks/claim.js";
import { postgresTurnStore } from "../../src/sql/turn-store.js";
import { createTestDatabase } from "../helpers/db.js";
import {
  geminiReplies as replies,
  startFakeGemini,
  type FakeGemini,
} from "../helpers/fake-gemini.js";
import { fakeThread, fakeWorkspace, registerTestRuntime } from "../helpers/runner-fakes.js";
import { readTask, seedTask } from "../helpers/seed.js";

const db = await createTestDatabase();
const pool = db.pool;
await registerTestRuntime(pool);
const log = createLogger("silent");
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-gemini-turn-"));
const MODEL = "gemini-2.5-flash";
let fake: FakeGemini;
let sandbox: Sandbox;
let agent: ReturnType<typeof agentForClis>;

beforeAll(async () => {
  fake = await startFakeGemini();
  sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(root, "sandbox"), log });
  expect(sandbox.status).toMatchObject({ ok: true });
  const cli = createGeminiCli({
    path: resolveGeminiPath({}),
    log,
    baseEnv: {
      PATH: process.env.PATH,
      HOME: root,
      GEMINI_API_KEY: "AIza-test-key",
      GOOGLE_GEMINI_BASE_URL: fake.url,
    },
  });
  agent = agentForClis({
    gemini: cliAgent(cli, {
      log,
      contain: {
        sandbox,
        homes: path.join(root, "homes"),
        transcripts: postgresTranscripts({
          pool,
          cacheRoot: path.join(root, "sessions"),
          log,
          maxBytes: 64 * 1024 * 1024,
          cliVersion: async () => (await cli.probe()).version,
          layout: geminiLayout,
        }),
      },
    }),
  });
});
afterAll(async () => {
  await fake?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const thread = () =>
  fakeThread({
    stampComments: true,
    agents: {
      tether: { name: "tether", cli: "gemini", model: MODEL, timeoutMinutes: 5, stallMinutes: 5 },
    },
  });
const workspace = fakeWorkspace(path.join(root, "ws"));

let issue = 0;
async function turn(t: ReturnType<typeof thread>, body: string, signal?: AbortSignal) {
  const seeded = await seedTask(pool, { issue_number: issue, trigger_body: body });
  const [task] = await claimTasks(pool, "runner-1", "rt", 1);
  expect(task?.id).toBe(seeded.id);
  await runTask(
    {
      store: postgresTurnStore(pool),
      log,
      runnerId: "runner-1",
      runtimeId: "rt",
      agent,
      workspace,
      github: async () => t,
      progressIntervalMs: 0,
    },
    task!,
    signal ?? new AbortController().signal,
  );
  return readTask(pool, seeded.id);
}

const lastContents = () => JSON.stringify(fake.turnRequests().at(-1)!.body?.contents);

describe("a cli: gemini agent's turns", { timeout: 300_000 }, () => {
  it("a fresh turn, then a follow-up that resumes the session with the first turn at the API", async () => {
    issue++;
    const t = thread();
    fake.script(replies.text("FIRST-ANSWER"), replies.text("SECOND-ANSWER"));
    const first = await turn(t, "@tether FIRST-QUESTION");
    expect(first).toMatchObject({ status: "succeeded", cli: "gemini", resume_decision: "fresh" });
    expect(Number(first.cost_usd)).toBeGreaterThan(0);
    const session = await pool.query("SELECT cli FROM sessions WHERE session_id = $1", [
      first.session_id,
    ]);
    expect(session.rows[0].cli).toBe("gemini");
    const second = await turn(t, "@tether SECOND-QUESTION");
    expect(second).toMatchObject({
      status: "succeeded",
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: first.session_id,
    });
    expect(lastContents()).toContain("FIRST-ANSWER");
    expect(t.comments.at(-1)!.body).toContain("SECOND-ANSWER");
  });

  it("a session the store cannot give back whole: the CLI rejects the resume, the session is retired, the turn runs fresh", async () => {
    issue++;
    const t = thread();
    fake.script(replies.text("ONE"), replies.text("FRESH-AGAIN"));
    const first = await turn(t, "@tether one");
    expect(first.status).toBe("succeeded");
    // The stored bytes fail their check (and this runner's cache is gone): nothing is restored,
    // and the CLI, asked to resume a session it does not have, refuses (exit 42).
    await pool.query("UPDATE session_transcript_chunks SET data = '\\x00' WHERE session_id = $1", [
      first.session_id,
    ]);
    fs.rmSync(path.join(root, "sessions"), { recursive: true, force: true });
    const second = await turn(t, "@tether two");
    expect(second).toMatchObject({
      status: "succeeded",
      resume_decision: "fresh",
      resume_reason: "resume_rejected",
      retried_fresh: true,
    });
    expect(second.session_id).not.toBe(first.session_id);
    const old = await pool.query("SELECT state FROM sessions WHERE session_id = $1", [
      first.session_id,
    ]);
    expect(old.rows[0].state).toBe("retired");
    expect(t.comments.at(-1)!.body).toContain("FRESH-AGAIN");
  });

  it("a resumed session over the model's window is poisoned and the turn answered fresh", async () => {
    issue++;
    const t = thread();
    fake.script(replies.text("ONE"), replies.contextOverflow(), replies.text("AFTER-OVERFLOW"));
    const first = await turn(t, "@tether one");
    const second = await turn(t, "@tether two");
    expect(second).toMatchObject({
      status: "succeeded",
      resume_decision: "fresh",
      resume_reason: "context_overflow",
    });
    const old = await pool.query("SELECT state FROM sessions WHERE session_id = $1", [
      first.session_id,
    ]);
    expect(old.rows[0].state).toBe("poisoned");
    expect(t.comments.at(-1)!.body).toContain("AFTER-OVERFLOW");
  });

  it("cancel stops the run while it waits on the API", async () => {
    issue++;
    const t = thread();
    fake.script(replies.hang());
    const before = fake.turnRequests().length;
    const ac = new AbortController();
    const done = turn(t, "@tether wait", ac.signal);
    await fake.waitFor(() => fake.turnRequests().length > before, 120_000);
    ac.abort();
    expect(await done).toMatchObject({ outcome: "cancelled" });
  });
});
