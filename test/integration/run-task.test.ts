/**
 * The runner's orchestration on real Postgres with narrow fakes for GitHub, the workspace and the
 * agent. The end-to-end tests (real CLI, GitHub stand-in) prove the same paths for real; these
 * pin down the branching quickly.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import type {
  AgentSettings,
  SpendSettings,
  AgentRunRequest,
  AgentRunResult,
  GitHubThread,
  ReviewDiscussion,
  StagedRun,
  WorkspacePort,
} from "../../src/runner/ports.js";
import { postPendingAnswers } from "../../src/runner/loop/post-answers.js";
import { runTask, type RunTaskDeps } from "../../src/runner/turn/run-task.js";
import { findTaskMarker } from "../../src/runner/render/thread-comments.js";
import { claimTasks } from "../../src/sql/tasks/claim.js";
import { postgresTurnStore } from "../../src/sql/turn-store.js";
import { createTestDatabase } from "../helpers/db.js";
import { readTask, seedTask } from "../helpers/seed.js";
import {
  fakeThread as sharedFakeThread,
  fakeWorkspace,
  registerTestRuntime,
  StandInAgent,
} from "../helpers/runner-fakes.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
const pool = db.pool;
await registerTestRuntime(pool);
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-rt-"));

type Script = (req: AgentRunRequest) => Promise<AgentRunResult> | AgentRunResult;

class FakeAgent extends StandInAgent {
  calls: AgentRunRequest[] = [];
  constructor(private readonly script: Script[]) {
    super();
  }
  async run(req: AgentRunRequest) {
    this.calls.push(req);
    const next = this.script.shift();
    if (!next) throw new Error("no scripted run left");
    return next(req);
  }
}

const usage = {
  model: "m",
  inputTokens: 10,
  outputTokens: 5,
  cacheReadTokens: 0,
  cacheCreationTokens: 0,
  contextTokens: 1000,
  costUsd: 0.001,
  numTurns: 1,
  durationMs: 100,
};
const ok =
  (sessionId: string, text = "done"): Script =>
  async (req) => {
    await req.onSession(sessionId, "m");
    return {
      outcome: "success",
      sessionId,
      text,
      usage,
      contextWindow: 200_000,
      toolRan: false,
      detail: null,
    };
  };

/** The thread these tests were written against: ids from 9000, timestamps, GitHub's 404 on edits, two agents. */
const fakeThread = () =>
  sharedFakeThread({
    firstId: 9000,
    stampComments: true,
    strictUpdates: true,
    agents: {
      tether: { name: "tether", cli: "claude", model: "m", timeoutMinutes: 30, stallMinutes: 5 },
      reviewer: { name: "reviewer", cli: "claude", timeoutMinutes: 30, stallMinutes: 5 },
    },
  });

const workspace = fakeWorkspace(root);

let issue = 0;
async function turn(
  agent: FakeAgent,
  thread: ReturnType<typeof fakeThread>,
  over: Record<string, unknown> = {},
) {
  return turnWith(agent, thread, workspace, over);
}

async function turnWith(
  agent: FakeAgent,
  thread: ReturnType<typeof fakeThread>,
  ws: WorkspacePort,
  over: Record<string, unknown> = {},
  deps0: Partial<RunTaskDeps> = {},
) {
  const t = await seedTask(pool, { repo: "octo/widgets", issue_number: issue, ...over });
  const [task] = await claimTasks(pool, "runner-1", "rt", 1);
  expect(task?.id).toBe(t.id);
  const deps: RunTaskDeps = {
    store: postgresTurnStore(pool),
    log: createLogger("silent"),
    runnerId: "runner-1",
    runtimeId: "rt",
    agent,
    workspace: ws,
    github: async () => thread,
    progressIntervalMs: 0,
    ...deps0,
  };
  await runTask(deps, task!, new AbortController().signal);
  return readTask(pool, t.id);
}

/** `p`, or a failure after 5 s naming the step that never happened. */
const within = <T>(p: Promise<T>, what: string) =>
  Promise.race([
    p,
    new Promise<never>((_r, reject) =>
      setTimeout(
        () => reject(new Error(`${what} never happened: steps ran one after another`)),
        5000,
      ),
    ),
  ]);

describe("runTask", () => {
  it("first turn runs fresh, pins the session before the run ends, and answers once", async () => {
    issue++;
    const thread = fakeThread();
    let pinnedDuringRun: unknown;
    const agent = new FakeAgent([
      async (req) => {
        await req.onSession("s-1", "m");
        pinnedDuringRun = (
          await pool.query("SELECT session_id FROM tasks WHERE status = 'running'")
        ).rows[0]?.session_id;
        req.onProgress({ kind: "tool", name: "Read" });
        return {
          outcome: "success",
          sessionId: "s-1",
          text: "Here is the fix.",
          usage,
          contextWindow: 200_000,
          toolRan: true,
          detail: null,
        };
      },
    ]);
    const row = await turn(agent, thread);
    expect(pinnedDuringRun).toBe("s-1");
    expect(row).toMatchObject({
      status: "succeeded",
      outcome: "success",
      session_id: "s-1",
      resume_decision: "fresh",
      resume_reason: "no_prior_session",
      is_follow_up: false,
    });
    expect(agent.calls[0]?.resumeSessionId).toBeNull();
    expect(agent.calls[0]?.prompt).toContain("# Instruction");
    expect(thread.creates).toBe(1);
    expect(thread.comments[0]?.body).toMatch(/^Here is the fix\./);
    expect(row.answer_comment_id).toBe(thread.comments[0]?.id);
  });

  it("with TETHER_PUBLIC_URL, the answer's footer links to the conversation's page (#30)", async () => {
    const answer = async (deps0: Partial<RunTaskDeps>) => {
      issue++;
      const thread = fakeThread();
      const agent = new FakeAgent([
        async () => ({
          outcome: "success",
          sessionId: `s-link-${issue}`,
          text: "Done.",
          usage,
          contextWindow: 200_000,
          toolRan: false,
          detail: null,
        }),
      ]);
      await turnWith(agent, thread, workspace, {}, deps0);
      return thread.comments[0]?.body ?? "";
    };
    const linked = await answer({ publicUrl: "https://tether.example.com" });
    expect(linked).toContain(
      `[conversation log (operators only)](https://tether.example.com/dashboard/conversations/octo/widgets/${issue}/tether)`,
    );
    expect(await answer({})).not.toContain("conversation log");
  });

  it("a follow-up resumes the session with the focus guard and only the new comment", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new FakeAgent([ok("s-2"), ok("s-2", "second")]);
    await turn(agent, thread);
    const row = await turn(agent, thread, { trigger_body: "@tether and now the docs" });
    expect(row).toMatchObject({
      resume_decision: "resume",
      resume_reason: "resumed",
      is_follow_up: true,
      session_id: "s-2",
    });
    expect(agent.calls[0]?.resumeSessionId).toBeNull();
    expect(agent.calls[1]?.resumeSessionId).toBe("s-2");
    expect(agent.calls[1]?.prompt).toMatch(/^A NEW comment/);
    expect(agent.calls[1]?.prompt).toContain("and now the docs");
    expect(agent.calls[1]?.prompt).not.toContain("It breaks");
    expect(thread.creates).toBe(2);
  });

  it("a rejected resume retires the session and retries fresh once in the same task", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new FakeAgent([
      ok("s-3"),
      () => ({
        outcome: "resume_rejected",
        sessionId: null,
        text: null,
        usage: null,
        contextWindow: null,
        toolRan: false,
        detail: "No conversation found",
      }),
      ok("s-4", "fresh answer"),
    ]);
    await turn(agent, thread);
    const row = await turn(agent, thread);
    expect(agent.calls.map((c) => c.resumeSessionId)).toEqual([null, "s-3", null]);
    expect(agent.calls[2]?.prompt).toContain("# Instruction"); // the full context again
    expect(row).toMatchObject({
      status: "succeeded",
      resume_reason: "resume_rejected",
      resume_decision: "fresh",
      retried_fresh: true,
      session_id: "s-4",
    });
    expect(
      (await pool.query("SELECT state FROM sessions WHERE session_id = 's-3'")).rows[0].state,
    ).toBe("retired");
    expect(thread.creates).toBe(2); // one comment per task
  });

  it.each([
    // What the CLI's dialect classified decides, not the words of its detail.
    ["an overflow", true, "context_overflow"],
    ["another break (its words mention a long prompt)", false, "poisoned"],
  ])(
    "a resumed session poisoned by %s before any tool ran: marked, retried fresh in the same task as %s",
    async (_what, contextOverflow, reason) => {
      issue++;
      const thread = fakeThread();
      const broken = `s-broken-${issue}`;
      const agent = new FakeAgent([
        ok(broken),
        async (req) => {
          await req.onSession(broken, "m");
          return {
            outcome: "poisoned",
            sessionId: broken,
            text: null,
            usage,
            contextWindow: null,
            toolRan: false,
            detail: "prompt is too long",
            ...(contextOverflow ? { contextOverflow: true } : {}),
          };
        },
        ok(`s-after-${issue}`, "fresh answer"),
      ]);
      await turn(agent, thread);
      const row = await turn(agent, thread);
      expect(agent.calls.map((c) => c.resumeSessionId)).toEqual([null, broken, null]);
      expect(row).toMatchObject({
        status: "succeeded",
        resume_decision: "fresh",
        resume_reason: reason,
        retried_fresh: true,
        session_id: `s-after-${issue}`,
      });
      const state = await pool.query("SELECT state FROM sessions WHERE session_id = $1", [broken]);
      expect(state.rows[0].state).toBe("poisoned");
      expect(thread.comments.at(-1)?.body).toContain("fresh answer");
    },
  );

  it("does not retry a rejected resume once a tool ran", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new FakeAgent([
      ok("s-5"),
      () => ({
        outcome: "resume_rejected",
        sessionId: "s-other",
        text: null,
        usage: null,
        contextWindow: null,
        toolRan: true,
        detail: "different session id",
      }),
    ]);
    await turn(agent, thread);
    const row = await turn(agent, thread);
    expect(agent.calls).toHaveLength(2);
    expect(row).toMatchObject({ status: "failed", outcome: "resume_rejected" });
  });

  it("a poisoned session is marked and the next turn starts fresh", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new FakeAgent([
      async (req) => {
        await req.onSession("s-6", "m");
        return {
          outcome: "poisoned",
          sessionId: "s-6",
          text: null,
          usage,
          contextWindow: null,
          toolRan: false,
          detail: "prompt is too long",
        };
      },
      ok("s-7"),
    ]);
    const first = await turn(agent, thread);
    expect(first).toMatchObject({ status: "failed", outcome: "poisoned", session_id: "s-6" });
    expect(thread.comments[0]?.body).toContain("no longer fits the model");
    const second = await turn(agent, thread);
    expect(second).toMatchObject({
      resume_decision: "fresh",
      resume_reason: "poisoned",
      session_id: "s-7",
    });
  });

  it("a retried task (after a crash) edits its existing comment instead of posting another", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new FakeAgent([ok("s-8", "final")]);
    // Attempt 1 created the comment but died before recording its id.
    await thread.createComment(
      issue,
      "⏳ **tether** is working on this.\n<!-- tether:task:PLACEHOLDER -->",
    );
    const t = await seedTask(pool, { repo: "octo/widgets", issue_number: issue, attempts: 1 });
    thread.comments[0]!.body = thread.comments[0]!.body.replace("PLACEHOLDER", String(t.id));
    const [task] = await claimTasks(pool, "runner-1", "rt", 1);
    await runTask(
      {
        store: postgresTurnStore(pool),
        log: createLogger("silent"),
        runnerId: "runner-1",
        runtimeId: "rt",
        agent,
        workspace,
        github: async () => thread,
        progressIntervalMs: 0,
      },
      task!,
      new AbortController().signal,
    );
    expect(thread.creates).toBe(1);
    expect(thread.comments).toHaveLength(1);
    expect(thread.comments[0]?.body).toMatch(/^final/);
    expect((await readTask(pool, t.id)).answer_comment_id).toBe(thread.comments[0]?.id);
  });

  it("never posts the installation token", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new FakeAgent([ok("s-9", "my token is ghs_faketokenfaketokenfaketoken1234")]);
    await turn(agent, thread);
    expect(thread.comments[0]?.body).not.toContain("ghs_faketoken");
    expect(thread.comments[0]?.body).toContain("[redacted]");
  });

  // The hot path to the spawn (issue 5: webhook → CLI spawn p50 ≤ 100 ms): git runs while the
  // decision's inputs are read and the thread is fetched, and the run does not wait for GitHub to
  // store the tracking comment. Each test makes one step wait for another that a serial order
  // would only start later; a regression deadlocks and the bounded wait fails it (`within`).

  it("starts the workspace update before the config is read", async () => {
    issue++;
    const thread = fakeThread();
    let prepareStarted!: () => void;
    const started = new Promise<void>((r) => (prepareStarted = r));
    const config = thread.loadConfig;
    thread.loadConfig = async () => {
      await within(started, "the workspace update starting before the config was read");
      return config();
    };
    const ws: WorkspacePort = {
      ...workspace,
      prepare: async (req) => {
        prepareStarted();
        return workspace.prepare(req);
      },
    };
    const agent = new FakeAgent([ok("s-par-1")]);
    const row = await turnWith(agent, thread, ws);
    expect(row).toMatchObject({ status: "succeeded" });
  });

  it("fetches a fresh run's thread while the workspace is prepared", async () => {
    issue++;
    const thread = fakeThread();
    let listed!: () => void;
    const threadRead = new Promise<void>((r) => (listed = r));
    const list = thread.listComments;
    thread.listComments = async (n: number) => {
      listed();
      return list(n);
    };
    const ws: WorkspacePort = {
      ...workspace,
      prepare: async (req) => {
        await within(threadRead, "the thread being fetched while git worked");
        return workspace.prepare(req);
      },
    };
    const row = await turnWith(new FakeAgent([ok("s-par-2")]), thread, ws);
    expect(row).toMatchObject({ status: "succeeded", resume_decision: "fresh" });
  });

  it("stages the run's HOME while the workspace is prepared; the run gets it, and an unused one is released", async () => {
    issue++;
    const thread = fakeThread();
    const stagedRuns: Array<{ released: number; req: unknown }> = [];
    let staged!: () => void;
    const stagedP = new Promise<void>((r) => (staged = r));
    class StagingAgent extends FakeAgent {
      override stage(req: Pick<AgentRunRequest, "key" | "cwd" | "resumeSessionId">): StagedRun {
        const s = { released: 0, req };
        stagedRuns.push(s);
        staged();
        return { ...req, release: async () => void s.released++ };
      }
    }
    const ws: WorkspacePort = {
      ...workspace,
      prepare: async (req) => {
        await within(stagedP, "the HOME being staged while git worked");
        return workspace.prepare(req);
      },
    };
    const agent = new StagingAgent([ok("s-stage-1")]);
    const row = await turnWith(agent, thread, ws);
    expect(row).toMatchObject({ status: "succeeded", resume_decision: "fresh" });
    expect(stagedRuns).toHaveLength(1);
    expect(stagedRuns[0]!.req).toMatchObject({
      key: {
        repoId: repoIdOf("octo/widgets"),
        repo: "octo/widgets",
        issueNumber: issue,
        agent: "tether",
      },
      resumeSessionId: null,
    });
    expect(agent.calls[0]!.staged).toMatchObject({ resumeSessionId: null });
    // The turn always offers to release it; the agent's release is a no-op once a run took it.
    expect(stagedRuns[0]!.released).toBe(1);

    // A turn that ends before its run (the workspace failed) releases what it staged.
    issue++;
    const failing: WorkspacePort = {
      ...workspace,
      prepare: async () => {
        throw new Error("git failed");
      },
    };
    const failed = await turnWith(new StagingAgent([]), fakeThread(), failing);
    expect(failed).toMatchObject({ status: "failed" });
    expect(stagedRuns).toHaveLength(2);
    expect(stagedRuns[1]!.released).toBe(1);
  });

  it("starts the run without waiting for the tracking comment to be stored, then answers in it", async () => {
    issue++;
    const thread = fakeThread();
    let runStarted!: () => void;
    const running = new Promise<void>((r) => (runStarted = r));
    const create = thread.createComment;
    let creates = 0;
    thread.createComment = async (n: number, body: string) => {
      if (creates++ === 0)
        await within(running, "the run starting before the tracking comment was stored");
      return create(n, body);
    };
    const agent = new FakeAgent([
      async (req) => {
        runStarted();
        return ok("s-par-3", "the answer")(req);
      },
    ]);
    const row = await turnWith(agent, thread, workspace);
    expect(row).toMatchObject({ status: "succeeded" });
    // One comment: the tracking comment, edited into the answer after it was stored.
    expect(creates).toBe(1);
    expect(thread.comments).toHaveLength(1);
    expect(thread.comments[0]?.body).toMatch(/^the answer/);
    expect(row.answer_comment_id).toBe(thread.comments[0]?.id);
  });

  it("an invalid config stops the workspace update it started, and posts the problem", async () => {
    issue++;
    const thread = fakeThread();
    thread.loadConfig = async () => ({ ok: false as const, message: "bad yaml at line 3" });
    let aborted = false;
    const ws: WorkspacePort = {
      ...workspace,
      prepare: (req) =>
        new Promise((_resolve, reject) => {
          req.signal?.addEventListener("abort", () => {
            aborted = true;
            reject(new Error("aborted"));
          });
        }),
    };
    const agent = new FakeAgent([]);
    const row = await turnWith(agent, thread, ws);
    expect(aborted).toBe(true);
    expect(row).toMatchObject({ status: "failed" });
    expect(agent.calls).toHaveLength(0);
    expect(thread.comments[0]?.body).toContain("bad yaml at line 3");
  });
});

describe("runTask when GitHub refuses the thread's writes past the retries", () => {
  /**
   * The thread's comment writes fail (as Octokit reports a 503 after the request policy's
   * retries) from the `from`-th write on, until `up()`.
   */
  function outage(thread: ReturnType<typeof fakeThread>, from = 0) {
    const create = thread.createComment;
    const update = thread.updateComment;
    let writes = 0;
    const state = { down: true, refused: 0 };
    const refuse = () => {
      state.refused++;
      throw Object.assign(new Error("Service Unavailable"), { status: 503 });
    };
    thread.createComment = async (n, body) => {
      if (state.down && writes++ >= from) refuse();
      return create(n, body);
    };
    thread.updateComment = async (id, body) => {
      if (state.down && writes++ >= from) refuse();
      return update(id, body);
    };
    return state;
  }
  const post = (thread: GitHubThread) =>
    postPendingAnswers({ pool, log: createLogger("silent"), github: async () => thread });
  const overdue = (id: unknown) =>
    pool.query(`UPDATE tasks SET answer_next_at = now() WHERE id = $1`, [id]);

  it("finishes with the status the run earned and the answer pending; the answer poster posts it once GitHub is back, and never again", async () => {
    issue++;
    const thread = fakeThread();
    const gh = outage(thread);
    const agent = new FakeAgent([ok("s-out-1", "The fix is in split().")]);
    const row = await turnWith(agent, thread, workspace, {}, { answerRetry: { baseMs: 45_000 } });
    expect(row).toMatchObject({
      status: "succeeded",
      outcome: "success",
      session_id: "s-out-1",
      answer_pending: true,
      answer_comment_id: null,
      tracking_comment_id: null,
    });
    expect(String(row.answer_body)).toMatch(/^The fix is in split\(\)\./);
    expect(findTaskMarker(String(row.answer_body))).toBe(row.id);
    expect(thread.comments).toHaveLength(0);
    expect(gh.refused).toBe(2); // the tracking comment and the answer
    // Not before the first wait: GitHub has just failed.
    const { rows } = await pool.query(
      `SELECT answer_next_at > now() + interval '40 seconds' AS later FROM tasks WHERE id = $1`,
      [row.id],
    );
    expect(rows[0].later).toBe(true);
    expect(await post(thread)).toEqual({ posted: [], retrying: [], gaveUp: [] });

    // Still down at the first delivery: backs off.
    await overdue(row.id);
    expect((await post(thread)).retrying).toEqual([row.id]);
    expect(thread.comments).toHaveLength(0);

    gh.down = false;
    await overdue(row.id);
    expect((await post(thread)).posted).toEqual([row.id]);
    expect(thread.comments).toHaveLength(1);
    expect(thread.comments[0]!.body).toBe(row.answer_body);
    expect(await readTask(pool, row.id)).toMatchObject({
      status: "succeeded",
      answer_pending: false,
      answer_comment_id: thread.comments[0]!.id,
    });
    const before = thread.comments[0]!.body;
    await overdue(row.id);
    expect(await post(thread)).toEqual({ posted: [], retrying: [], gaveUp: [] });
    expect(thread.creates).toBe(1);
    expect(thread.comments[0]!.body).toBe(before);
  });

  it("when only the answer's edit failed, the answer poster edits the tracking comment instead of adding one", async () => {
    issue++;
    const thread = fakeThread();
    const gh = outage(thread, 1); // the tracking comment goes through
    const agent = new FakeAgent([
      async (req) => {
        // The run ends with a failure, which is an answer too.
        await req.onSession("s-out-2", "m");
        return {
          outcome: "stalled",
          sessionId: "s-out-2",
          text: null,
          usage: null,
          contextWindow: null,
          toolRan: false,
          detail: "no output",
        };
      },
    ]);
    const row = await turnWith(agent, thread, workspace, {}, { answerRetry: { baseMs: 100 } });
    expect(row).toMatchObject({ status: "failed", outcome: "stalled", answer_pending: true });
    expect(thread.comments).toHaveLength(1);
    expect(thread.comments[0]!.body).toMatch(/^⏳/);
    expect(row.tracking_comment_id).toBe(thread.comments[0]!.id);
    expect(String(row.answer_body)).toContain("produced no output for 5 minutes");

    gh.down = false;
    await overdue(row.id);
    expect((await post(thread)).posted).toEqual([row.id]);
    expect(thread.creates).toBe(1);
    expect(thread.comments).toHaveLength(1);
    expect(thread.comments[0]!.body).toBe(row.answer_body);
    expect((await readTask(pool, row.id)).answer_comment_id).toBe(thread.comments[0]!.id);
  });

  it("an invalid config's reply is kept the same way, with the task's marker", async () => {
    issue++;
    const thread = fakeThread();
    thread.loadConfig = async () => ({ ok: false as const, message: "bad yaml at line 9" });
    const gh = outage(thread);
    const row = await turnWith(new FakeAgent([]), thread, workspace);
    expect(row).toMatchObject({ status: "failed", answer_pending: true });
    expect(String(row.answer_body)).toContain("bad yaml at line 9");
    gh.down = false;
    await overdue(row.id);
    expect((await post(thread)).posted).toEqual([row.id]);
    expect(findTaskMarker(thread.comments[0]!.body)).toBe(row.id);
  });

  it("no GitHub access at all: failed, and the failure pending for the answer poster to render", async () => {
    issue++;
    const thread = fakeThread();
    let reachable = false;
    const row = await turnWith(
      new FakeAgent([]),
      thread,
      workspace,
      {},
      {
        github: async () => {
          if (!reachable) throw new Error("could not get an installation token: HTTP 502");
          return thread;
        },
      },
    );
    expect(row).toMatchObject({
      status: "failed",
      answer_pending: true,
      answer_body: null,
      failure_reason: "GitHub access failed: could not get an installation token: HTTP 502",
    });
    reachable = true;
    await overdue(row.id);
    expect((await post(thread)).posted).toEqual([row.id]);
    expect(thread.comments[0]!.body).toMatch(
      /^⚠️ The run failed: GitHub access failed: could not get an installation token: HTTP 502\. Comment again to retry/,
    );
  });

  it("runs git housekeeping after the answer is posted, while the task still holds its key", async () => {
    issue++;
    const thread = fakeThread();
    const seen: Array<{ status: unknown; answered: boolean }> = [];
    const ws: WorkspacePort = {
      ...workspace,
      maintain: async (req) => {
        const { rows } = await pool.query(
          "SELECT status FROM tasks WHERE repo = $1 AND issue_number = $2 AND agent = $3",
          [req.repo, req.issueNumber, req.agent],
        );
        seen.push({
          status: rows[0]?.status,
          answered: thread.comments.some((c) => c.body.startsWith("housekept")),
        });
      },
    };
    const row = await turnWith(new FakeAgent([ok("s-gc", "housekept")]), thread, ws);
    expect(seen).toEqual([{ status: "running", answered: true }]);
    expect(row).toMatchObject({ status: "succeeded" });
  });

  it("runs with the settings intake stored on the task, without reading the config again", async () => {
    issue++;
    const thread = fakeThread();
    let reads = 0;
    thread.loadConfig = async () => {
      reads++;
      throw new Error("the config must not be read when the task carries its settings");
    };
    const snapshot = {
      v: 2,
      agents: {
        tether: {
          name: "tether",
          cli: "claude",
          model: "snapshot-model",
          timeoutMinutes: 7,
          stallMinutes: 3,
        },
      },
      resume: { enabled: true, ttlHours: 72, contextBudget: 0.8 },
      spend: { freshResetsConversation: false },
    };
    const agent = new FakeAgent([ok("s-snap")]);
    const row = await turn(agent, thread, { repo_settings: JSON.stringify(snapshot) });
    expect(reads).toBe(0);
    expect(row).toMatchObject({ status: "succeeded" });
    expect(agent.calls[0]?.settings).toMatchObject({ model: "snapshot-model", timeoutMinutes: 7 });
  });

  it("reads the config from GitHub for a task without usable settings", async () => {
    issue++;
    const thread = fakeThread();
    let reads = 0;
    const load = thread.loadConfig;
    thread.loadConfig = async () => {
      reads++;
      return load();
    };
    const agent = new FakeAgent([ok("s-nosnap")]);
    await turn(agent, thread, { repo_settings: JSON.stringify({ v: 99 }) });
    expect(reads).toBe(1);
    expect(agent.calls[0]?.settings).toMatchObject({ model: "m" });
  });
});

describe("runTask with projectInstructions", () => {
  const project = {
    text: "PROJECT-RULES: run make check\n",
    bytes: 30,
    cut: false,
    branch: "main",
  };
  const threadWith = (projectInstructions: boolean) =>
    sharedFakeThread({
      agents: {
        tether: {
          name: "tether",
          cli: "claude",
          timeoutMinutes: 30,
          stallMinutes: 5,
          projectInstructions,
        },
      },
    });

  it("on: the default branch's CLAUDE.md (as the workspace read it) is in the system prompt", async () => {
    issue++;
    const asked: unknown[] = [];
    const ws: WorkspacePort = {
      ...fakeWorkspace(root, {
        prepare: async (req) => ({
          ...(await workspace.prepare(req)),
          defaultBranch: "main",
        }),
      }),
      projectInstructions: async (req) => {
        asked.push(req);
        return project;
      },
    };
    const agent = new FakeAgent([ok("s-proj-1")]);
    const row = await turnWith(agent, threadWith(true), ws);
    expect(row).toMatchObject({ status: "succeeded" });
    expect(asked).toEqual([expect.objectContaining({ repo: "octo/widgets", branch: "main" })]);
    expect(agent.calls[0]!.systemPrompt).toContain(
      "<project-instructions>\nPROJECT-RULES: run make check\n</project-instructions>",
    );
    // Never in the prompt itself: it is the system prompt's, the same on every turn.
    expect(agent.calls[0]!.prompt).not.toContain("PROJECT-RULES");
  });

  it("off (the default): never read, never sent", async () => {
    issue++;
    let reads = 0;
    const ws: WorkspacePort = {
      ...fakeWorkspace(root, {
        prepare: async (req) => ({ ...(await workspace.prepare(req)), defaultBranch: "main" }),
      }),
      projectInstructions: async () => {
        reads++;
        return project;
      },
    };
    const agent = new FakeAgent([ok("s-proj-2")]);
    await turnWith(agent, threadWith(false), ws);
    expect(reads).toBe(0);
    expect(agent.calls[0]!.systemPrompt).not.toContain("PROJECT-RULES");
  });

  it("a CLAUDE.md that cannot be read leaves the turn to run without it", async () => {
    issue++;
    const ws: WorkspacePort = {
      ...fakeWorkspace(root, {
        prepare: async (req) => ({ ...(await workspace.prepare(req)), defaultBranch: "main" }),
      }),
      projectInstructions: async () => {
        throw new Error("could not read CLAUDE.md");
      },
    };
    const agent = new FakeAgent([ok("s-proj-3")]);
    const row = await turnWith(agent, threadWith(true), ws);
    expect(row).toMatchObject({ status: "succeeded" });
    expect(agent.calls[0]!.systemPrompt).not.toContain("project-instructions");
  });
});

describe("runTask on a pull request", () => {
  const PR = "https://github.com/octo/widgets/pull";
  /** A pull request thread whose review discussion is `review` (a function: fetched lazily). */
  function prThread(review: () => Promise<ReviewDiscussion>) {
    const thread = fakeThread();
    thread.getIssue = async () => ({
      title: "Fix split",
      body: "Splits on CRLF too.",
      author: "alice",
      url: `${PR}/${issue}`,
      isPullRequest: true,
      pullRequest: { headRef: "fix-split", baseRef: "main", headSha: "0123abc0123abc" },
    });
    return Object.assign(thread, { listReviewDiscussion: review });
  }
  const place = {
    path: "src/split.js",
    subject: "line" as const,
    line: 3,
    startLine: 2,
    originalLine: 3,
    originalStartLine: 2,
    side: "RIGHT" as const,
    commitId: "0123abc0123abc",
    originalCommitId: "0123abc0123abc",
  };
  const discussion = (n: number): ReviewDiscussion => ({
    comments: [
      {
        id: 1,
        author: "dora",
        url: `${PR}/${n}#discussion_r1`,
        body: "A lone \\r still slips through here.",
        createdAt: "2026-11-20T12:00:00Z",
        place,
      },
      {
        id: 2,
        author: "carol",
        url: `${PR}/${n}#discussion_r2`,
        body: "@tether address the review",
        createdAt: "2026-11-20T12:05:00Z",
        place: { ...place, line: 10, startLine: null },
      },
    ],
    reviews: [
      {
        id: 3,
        author: "dora",
        url: `${PR}/${n}#pullrequestreview-3`,
        body: "Needs a test for CRLF.",
        createdAt: "2026-11-20T12:01:00Z",
        state: "changes_requested",
        commitId: "0123abc0123abc",
      },
    ],
    truncated: false,
  });

  it("a fresh turn reads the review discussion while git works and shows it, without this turn's own request", async () => {
    issue++;
    const n = issue;
    let read!: () => void;
    const reviewRead = new Promise<void>((r) => (read = r));
    const thread = prThread(async () => {
      read();
      return discussion(n);
    });
    const ws: WorkspacePort = {
      ...workspace,
      prepare: async (req) => {
        await within(reviewRead, "the review discussion being fetched while git worked");
        return workspace.prepare(req);
      },
    };
    const agent = new FakeAgent([ok("s-pr-1")]);
    const row = await turnWith(agent, thread, ws, {
      is_pull_request: true,
      trigger_url: `${PR}/${n}#discussion_r2`,
      trigger_body: "[Review comment on `src/split.js`, line 10 …]\n\n@tether address the review",
    });
    expect(row).toMatchObject({ status: "succeeded", resume_decision: "fresh" });
    const p = agent.calls[0]!.prompt;
    const context = p.slice(0, p.search(/^<\/github-context>$/m));
    expect(context).toContain("<review-discussion>");
    expect(context).toContain(
      "[Review comment on `src/split.js`, lines 2-3 of the pull request's version (the right side of the diff) at commit 0123abc0123abc.]",
    );
    expect(context.indexOf("A lone \\r")).toBeLessThan(context.indexOf("Needs a test for CRLF."));
    expect(context).toContain(
      "[Pull request review (changes requested) at commit 0123abc0123abc.]",
    );
    // The request is the instruction, once, and not context.
    expect(context).not.toContain("discussion_r2");
    expect(p.match(/@tether address the review/g)).toHaveLength(1);
  });

  it("a turn whose review discussion GitHub will not give still runs, and the prompt says it is missing", async () => {
    issue++;
    const thread = prThread(async () => {
      throw new Error("HTTP 502 from GitHub");
    });
    const agent = new FakeAgent([ok("s-pr-2")]);
    const row = await turn(agent, thread, { is_pull_request: true });
    expect(row).toMatchObject({ status: "succeeded" });
    expect(agent.calls[0]!.prompt).toContain(
      "The review discussion could not be read from GitHub for this turn.",
    );
  });

  it("the head's agent-control files are masked for the run (against the PR's base), and the masks go after it", async () => {
    issue++;
    const thread = prThread(async () => discussion(issue));
    const asked: unknown[] = [];
    const events: string[] = [];
    const masks = [{ path: "CLAUDE.md", kind: "file" as const, replacement: "/base/CLAUDE.md" }];
    const ws: WorkspacePort = {
      ...workspace,
      agentControl: async (req) => {
        asked.push(req);
        events.push("masks made");
        return { masks, dispose: async () => void events.push("masks removed") };
      },
    };
    const agent = new FakeAgent([
      async (req) => {
        events.push("run");
        return ok("s-pr-masks")(req);
      },
    ]);
    const row = await turnWith(agent, thread, ws, { is_pull_request: true });
    expect(row).toMatchObject({ status: "succeeded" });
    expect(asked).toEqual([
      expect.objectContaining({
        repoId: repoIdOf("octo/widgets"),
        repo: "octo/widgets",
        pullRequest: issue,
        baseRef: "main",
        dir: workspace.pathFor({
          repoId: repoIdOf("octo/widgets"),
          repo: "octo/widgets",
          issueNumber: issue,
          agent: "tether",
        }),
      }),
    ]);
    expect(agent.calls[0]!.masks).toEqual(masks);
    expect(events).toEqual(["masks made", "run", "masks removed"]);

    // An issue has no head to distrust: no masks asked for.
    issue++;
    const plain = new FakeAgent([ok("s-pr-masks-2")]);
    await turnWith(plain, fakeThread(), ws);
    expect(asked).toHaveLength(1);
    expect(plain.calls[0]!.masks).toBeUndefined();
  });

  it("masks that cannot be made fail the turn before the agent runs", async () => {
    issue++;
    const thread = prThread(async () => discussion(issue));
    const ws: WorkspacePort = {
      ...workspace,
      agentControl: async () => {
        throw new Error("could not read octo/widgets: git failed");
      },
    };
    const agent = new FakeAgent([]);
    const row = await turnWith(agent, thread, ws, { is_pull_request: true });
    expect(row).toMatchObject({ status: "failed", outcome: "failed" });
    expect(String(row.failure_reason)).toContain("could not read octo/widgets");
    expect(agent.calls).toEqual([]);
  });

  it("an issue never asks for a review discussion, and a resumed turn does not read it", async () => {
    issue++;
    let reads = 0;
    const counting = async () => {
      reads++;
      return discussion(issue);
    };
    const onIssue = Object.assign(fakeThread(), { listReviewDiscussion: counting });
    await turn(new FakeAgent([ok("s-pr-3")]), onIssue);
    expect(reads).toBe(0);

    issue++;
    const thread = prThread(counting);
    await turn(new FakeAgent([ok("s-pr-4")]), thread, { is_pull_request: true });
    expect(reads).toBe(1);
    const agent = new FakeAgent([ok("s-pr-4")]);
    const row = await turn(agent, thread, { is_pull_request: true });
    expect(row).toMatchObject({ resume_decision: "resume" });
    expect(reads).toBe(1);
    expect(agent.calls[0]!.prompt).not.toContain("review-discussion");
  });
});

describe("runTask: publishing the agent's changes", () => {
  type PublishCall = Parameters<NonNullable<RunTaskDeps["publish"]>["publish"]>[0];
  const report: Awaited<ReturnType<NonNullable<RunTaskDeps["publish"]>["publish"]>> = {
    result: "published",
    branch: "tether/1-tether",
    branchUrl: "https://github.com/octo/widgets/tree/tether/1-tether",
    sha: "0123456789abcdef0123456789abcdef01234567",
    commits: 1,
    files: [{ path: "a.ts", status: "A", mode: "100644", bytes: 3, added: 1, removed: 0 }],
    merged: [],
    pull: {
      number: 77,
      url: "https://github.com/octo/widgets/pull/77",
      opened: true,
      draft: true,
      state: "open",
    },
    compareUrl: null,
  };
  const publisher = () => {
    const calls: PublishCall[] = [];
    return {
      calls,
      port: {
        news: async () => ({ pullNumber: null, commits: [] }),
        publish: async (req: PublishCall) => {
          calls.push(req);
          return report;
        },
      },
    };
  };
  const withWriter = (agents?: Record<string, unknown>) => {
    const t = fakeThread();
    const writer = {} as NonNullable<GitHubThread["writer"]>;
    const loadConfig = agents
      ? async () => ({
          ok: true as const,
          settings: {
            agents: agents as never,
            resume: { enabled: true, ttlHours: 72, contextBudget: 0.8 },
            spend: { freshResetsConversation: false },
          },
        })
      : t.loadConfig;
    return Object.assign(t, { writer, loadConfig });
  };
  const upstreamWorkspace = fakeWorkspace(root, {
    prepare: async (req) => {
      const dir = path.join(root, req.repo, `issue-${req.issueNumber}`, req.agent);
      fs.mkdirSync(dir, { recursive: true });
      return {
        dir,
        defaultBranch: "main",
        upstream: { ref: `refs/remotes/origin/${req.follow ?? "main"}`, sha: "b".repeat(40) },
        headSha: "b".repeat(40),
      };
    },
  });

  it("after a turn that succeeded: publishes, records it on the task, and the answer says so between the text and the footer", async () => {
    issue++;
    const p = publisher();
    const thread = withWriter();
    const row = await turnWith(
      new FakeAgent([ok("s-pub-1", "Fixed it.")]),
      thread,
      upstreamWorkspace,
      {},
      { publish: p.port },
    );
    expect(p.calls).toHaveLength(1);
    expect(p.calls[0]).toMatchObject({
      key: {
        repoId: repoIdOf("octo/widgets"),
        repo: "octo/widgets",
        issueNumber: issue,
        agent: "tether",
      },
      upstreamRef: `refs/remotes/origin/tether/${issue}-tether`,
      defaultBranch: "main",
      mode: "pull_request",
      summary: "Fixed it.",
      requesters: [{ login: "octocat", url: expect.any(String) }],
    });
    expect(row).toMatchObject({
      publish_result: "published",
      published_sha: report.sha,
      commits_pushed: 1,
      pull_opened: 77,
    });
    const body = thread.comments[0]!.body;
    expect(body.indexOf("Fixed it.")).toBeLessThan(body.indexOf("Opened draft pull request [#77]"));
    expect(body.indexOf("Opened draft pull request")).toBeLessThan(body.indexOf("fresh session"));
  });

  it("not after a turn that failed, nor for an agent in plan mode or with changes: off", async () => {
    const p = publisher();
    issue++;
    const failed: Script = async () => ({
      outcome: "timed_out",
      sessionId: null,
      text: null,
      usage: null,
      contextWindow: null,
      toolRan: true,
      detail: "too slow",
    });
    const a = await turnWith(
      new FakeAgent([failed]),
      withWriter(),
      upstreamWorkspace,
      {},
      { publish: p.port },
    );
    expect(a.publish_result).toBeNull();
    for (const settings of [
      { name: "tether", timeoutMinutes: 30, stallMinutes: 5, permissionMode: "plan" },
      { name: "tether", timeoutMinutes: 30, stallMinutes: 5, changes: "off" },
    ]) {
      issue++;
      const row = await turnWith(
        new FakeAgent([ok(`s-pub-${issue}`)]),
        withWriter({ tether: settings }),
        upstreamWorkspace,
        {},
        { publish: p.port },
      );
      expect(row).toMatchObject({ status: "succeeded", publish_result: null });
    }
    expect(p.calls).toEqual([]);
  });

  it("a turn of an issue's key asked on its pull request answers on the pull request", async () => {
    issue++;
    const thread = withWriter();
    const posted: number[] = [];
    const create = thread.createComment;
    thread.createComment = async (n: number, body: string) => {
      posted.push(n);
      return create(n, body);
    };
    await turnWith(new FakeAgent([ok("s-pub-thread")]), thread, upstreamWorkspace, {
      thread_number: 9999,
    });
    expect(posted).toEqual([9999]);
  });
});

describe("runTask and the spend limits", () => {
  /** A thread whose config gives `tether` these limits and the repository these spend rules. */
  const limited = (
    agent: Partial<AgentSettings>,
    spend: SpendSettings = { freshResetsConversation: false },
  ) =>
    sharedFakeThread({
      agents: {
        tether: {
          name: "tether",
          mention: "@tether",
          cli: "claude",
          timeoutMinutes: 30,
          stallMinutes: 5,
          ...agent,
        },
      },
      spend,
    });
  /** A finished turn that cost `costUsd`. */
  const costing =
    (sessionId: string, costUsd: number, text = "done"): Script =>
    async (req) => {
      await req.onSession(sessionId, "m");
      return {
        outcome: "success",
        sessionId,
        text,
        usage: { ...usage, costUsd },
        contextWindow: 200_000,
        toolRan: false,
        detail: null,
      };
    };

  it("a conversation at its limit: the next turn is not run, the thread is told, the task is not a turn", async () => {
    issue++;
    const thread = limited({ conversationLimitUsd: 0.0015 });
    const agent = new FakeAgent([costing("s-lim", 0.001), costing("s-lim", 0.001)]);
    await turn(agent, thread); // $0.001 spent: under the limit
    const second = await turn(agent, thread); // starts under it, ends over it
    expect(second).toMatchObject({ status: "succeeded", cost_usd: 0.001 });
    expect(thread.comments[1]?.body).toContain("conversation $0.0020 of $0.0015");

    const third = await turn(agent, thread);
    expect(agent.calls).toHaveLength(2); // no run
    expect(third).toMatchObject({
      status: "cancelled",
      outcome: "limit_refused",
      resume_decision: null,
      session_id: null,
      cost_usd: null,
      answer_comment_id: thread.comments[2]?.id,
    });
    expect(third.failure_reason).toBe("not run: conversation: spent $0.0020 of $0.0015");
    const body = thread.comments[2]!.body;
    expect(body).toMatch(/^💸 Not run/);
    expect(body).toContain("has spent **$0.0020** of its **$0.0015** limit");
    expect(body).toContain("`/fresh` does not help");
    expect(findTaskMarker(body)).toBe(third.id);
  });

  it("/fresh, when the config does not let it reset the count: refused as well", async () => {
    issue++;
    const thread = limited({ conversationLimitUsd: 0.001 });
    const agent = new FakeAgent([costing("s-nr", 0.001)]);
    await turn(agent, thread);
    const fresh = await turn(agent, thread, { force_fresh: true });
    expect(agent.calls).toHaveLength(1);
    expect(fresh).toMatchObject({ outcome: "limit_refused" });
  });

  it("/fresh, when the config lets it reset the count: runs, and later turns count from it", async () => {
    issue++;
    const thread = limited({ conversationLimitUsd: 0.0015 }, { freshResetsConversation: true });
    const agent = new FakeAgent([
      costing("s-r1", 0.001),
      costing("s-r1", 0.001),
      costing("s-r2", 0.001),
      costing("s-r2", 0.001),
    ]);
    await turn(agent, thread);
    await turn(agent, thread); // $0.002: the limit is reached
    expect(await turn(agent, thread)).toMatchObject({ outcome: "limit_refused" });
    const refusal = thread.comments.at(-1)!.body;
    expect(refusal).toContain("Or start over with `@tether /fresh <request>`");

    const fresh = await turn(agent, thread, { force_fresh: true });
    expect(fresh).toMatchObject({ status: "succeeded", resume_reason: "forced_fresh" });
    expect(thread.comments.at(-1)!.body).toContain("conversation $0.0010 of $0.0015");
    // Counted from the /fresh turn on: $0.001, under the limit.
    expect(await turn(agent, thread)).toMatchObject({ status: "succeeded" });
    expect(thread.comments.at(-1)!.body).toContain("conversation $0.0020 of $0.0015");
    expect(await turn(agent, thread)).toMatchObject({ outcome: "limit_refused" });
    expect(agent.calls).toHaveLength(4);
  });

  it("a repository's month: its other issues' turns count, last month's do not", async () => {
    issue++;
    const repo = "octo/monthly";
    const thread = limited({}, { freshResetsConversation: false, repositoryMonthlyUsd: 1 });
    const now = new Date();
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) - 1000);
    // Another issue of the repository spent $0.60 this month, and $5 last month.
    await seedTask(pool, { repo, issue_number: 900, status: "succeeded", cost_usd: 0.6 });
    await seedTask(pool, {
      repo,
      issue_number: 901,
      status: "succeeded",
      cost_usd: 5,
      created_at: lastMonth,
    });
    const agent = new FakeAgent([costing("s-m1", 0.5)]);
    expect(await turn(agent, thread, { repo })).toMatchObject({ status: "succeeded" });
    const refused = await turn(agent, thread, { repo });
    expect(refused).toMatchObject({ outcome: "limit_refused" });
    expect(refused.failure_reason).toBe("not run: repository_month: spent $1.1000 of $1");
    expect(thread.comments.at(-1)!.body).toContain("This repository has spent **$1.10**");
    expect(thread.comments.at(-1)!.body).toContain("the monthly count starts again on 1 ");
  });

  it("an installation's month counts its other repositories", async () => {
    issue++;
    const thread = limited({}, { freshResetsConversation: false, installationMonthlyUsd: 2 });
    await seedTask(pool, {
      repo: "octo/elsewhere",
      installation_id: 77,
      status: "succeeded",
      cost_usd: 2,
    });
    const agent = new FakeAgent([]);
    const row = await turn(agent, thread, { repo: "octo/inst", installation_id: 77 });
    expect(row).toMatchObject({ outcome: "limit_refused" });
    expect(thread.comments.at(-1)!.body).toContain("`spend.installationMonthlyUsd`");
    // Another installation is not held back by it.
    const other = new FakeAgent([costing("s-i2", 0.1)]);
    expect(await turn(other, thread, { repo: "octo/inst", installation_id: 78 })).toMatchObject({
      status: "succeeded",
    });
  });

  it("a run stopped at the per-turn limit: outcome turn_limit, the footer says so, the session is kept and resumed next", async () => {
    issue++;
    const thread = limited({ turnLimitUsd: 0.05 });
    const agent = new FakeAgent([
      async (req) => {
        await req.onSession("s-tl", "m");
        return {
          outcome: "turn_limit",
          sessionId: "s-tl",
          text: "Half way there",
          usage: { ...usage, costUsd: 0.06 },
          contextWindow: 200_000,
          toolRan: true,
          detail: "stopped at the agent's per-turn spend limit after spending $0.0600",
        };
      },
      costing("s-tl", 0.01),
    ]);
    const stopped = await turn(agent, thread);
    expect(agent.calls[0]?.settings.turnLimitUsd).toBe(0.05);
    expect(stopped).toMatchObject({
      status: "failed",
      outcome: "turn_limit",
      session_id: "s-tl",
      cost_usd: 0.06,
    });
    const body = thread.comments[0]!.body;
    expect(body).toMatch(/^💸 The run reached this agent's per-turn spend limit of \$0\.05/);
    expect(body).toContain("> Half way there");
    expect(body).toContain("⛔ stopped at the $0.05 turn limit");
    expect(body).toContain("$0.0600");
    const next = await turn(agent, thread);
    expect(next).toMatchObject({ resume_decision: "resume", session_id: "s-tl" });
  });

  it("records the bytes of the prompt and the answer", async () => {
    issue++;
    const thread = limited({});
    const agent = new FakeAgent([costing("s-b", 0.001, "Ünïcode answer")]);
    const row = await turn(agent, thread);
    expect(row.prompt_bytes).toBe(Buffer.byteLength(agent.calls[0]!.prompt));
    expect(row.answer_bytes).toBe(Buffer.byteLength("Ünïcode answer"));
  });
});

describe("runTask: a session over the context budget", () => {
  /** An agent whose CLI compacts on request (Claude Code's `/compact`). */
  class CompactingAgent extends FakeAgent {
    override canCompact() {
      return true;
    }
  }
  const full =
    (sessionId: string, contextTokens = 190_000): Script =>
    async (req) => {
      await req.onSession(sessionId, "m");
      return {
        outcome: "success",
        sessionId,
        text: "a long answer",
        usage: { ...usage, contextTokens },
        contextWindow: 200_000,
        toolRan: false,
        detail: null,
      };
    };
  /** What the CLI does with `/compact`: a success, with compact_boundary when it compacted. */
  const compaction =
    (sessionId: string, compacted: boolean, costUsd = 0.002): Script =>
    async (req) => {
      expect(req.prompt).toBe("/compact");
      expect(req.resumeSessionId).toBe(sessionId);
      return {
        outcome: "success",
        sessionId,
        text: compacted ? "" : "Not enough messages to compact.",
        usage: { ...usage, contextTokens: null, numTurns: 0, costUsd },
        contextWindow: 200_000,
        toolRan: false,
        detail: null,
        ...(compacted
          ? { compacted: { trigger: "manual", preTokens: 190_000, postTokens: 4_000 } }
          : {}),
      };
    };
  const contextOf = async (sessionId: string) =>
    (await pool.query("SELECT context_tokens FROM sessions WHERE session_id = $1", [sessionId]))
      .rows[0]?.context_tokens as number | undefined;

  it("is compacted first (/compact on a resumed run), then the turn resumes it: reason compacted, both runs' cost", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new CompactingAgent([
      full("s-c1"),
      compaction("s-c1", true),
      ok("s-c1", "answer after compaction"),
    ]);
    await turn(agent, thread);
    const row = await turn(agent, thread, { trigger_body: "@tether and the tests" });
    expect(agent.calls.map((c) => [c.resumeSessionId, c.prompt.slice(0, 14)])).toEqual([
      [null, expect.any(String)],
      ["s-c1", "/compact"],
      ["s-c1", "A NEW comment "],
    ]);
    // The compaction ran with the turn's settings and system prompt, in its workspace.
    expect(agent.calls[1]?.settings).toEqual(agent.calls[2]?.settings);
    expect(agent.calls[1]?.systemPrompt).toBe(agent.calls[2]?.systemPrompt);
    expect(agent.calls[1]?.cwd).toBe(agent.calls[2]?.cwd);
    expect(row).toMatchObject({
      status: "succeeded",
      resume_decision: "resume",
      resume_reason: "compacted",
      compacted: true,
      session_id: "s-c1",
      num_turns: 1,
    });
    expect(row.cost_usd).toBeCloseTo(0.003, 9); // the compaction's $0.002 and the turn's $0.001
    expect(thread.comments.at(-1)?.body).toContain("answer after compaction");
    expect(thread.comments.at(-1)?.body).toContain("compacted and resumed session");
    expect(thread.creates).toBe(2);
    expect(await contextOf("s-c1")).toBe(1000); // the turn's, not the old 190k
  });

  it("a compaction the CLI refused (no compact_boundary): the turn runs fresh with the whole thread, compaction_failed", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new CompactingAgent([
      full("s-c2"),
      compaction("s-c2", false, 0),
      ok("s-c3", "fresh answer"),
    ]);
    await turn(agent, thread);
    const row = await turn(agent, thread);
    expect(agent.calls.map((c) => c.resumeSessionId)).toEqual([null, "s-c2", null]);
    expect(agent.calls[2]?.prompt).toContain("# Instruction"); // the full context again
    expect(row).toMatchObject({
      status: "succeeded",
      resume_decision: "fresh",
      resume_reason: "compaction_failed",
      compacted: false,
      session_id: "s-c3",
    });
    expect(thread.comments.at(-1)?.body).toContain("fresh session (compaction_failed)");
  });

  it("a compaction that could not resume the session retires it; the turn runs fresh (resume_rejected)", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new CompactingAgent([
      full("s-c4"),
      () => ({
        outcome: "resume_rejected",
        sessionId: null,
        text: null,
        usage: null,
        contextWindow: null,
        toolRan: false,
        detail: "No conversation found",
      }),
      ok("s-c5"),
    ]);
    await turn(agent, thread);
    const row = await turn(agent, thread);
    expect(agent.calls.map((c) => c.resumeSessionId)).toEqual([null, "s-c4", null]);
    expect(row).toMatchObject({ resume_reason: "resume_rejected", session_id: "s-c5" });
    expect(
      (await pool.query("SELECT state FROM sessions WHERE session_id = 's-c4'")).rows[0].state,
    ).toBe("retired");
  });

  it("not compacted when resume.compact is false, nor by a CLI that cannot: fresh, context_budget", async () => {
    for (const [agent, compact] of [
      [new CompactingAgent([full("s-c6"), ok("s-c7")]), false],
      [new FakeAgent([full("s-c8"), ok("s-c9")]), true],
    ] as const) {
      issue++;
      const thread = fakeThread();
      const loaded = await thread.loadConfig();
      if (!loaded.ok) throw new Error(loaded.message);
      thread.loadConfig = async () => ({
        ...loaded,
        settings: { ...loaded.settings, resume: { ...loaded.settings.resume, compact } },
      });
      await turn(agent, thread);
      const row = await turn(agent, thread);
      expect(agent.calls.map((c) => c.resumeSessionId)).toEqual([null, null]);
      expect(row).toMatchObject({
        resume_decision: "fresh",
        resume_reason: "context_budget",
        compacted: false,
      });
    }
  });

  it("/fresh on a session over the budget is not compacted", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new CompactingAgent([full("s-c10"), ok("s-c11")]);
    await turn(agent, thread);
    const row = await turn(agent, thread, { force_fresh: true });
    expect(agent.calls.map((c) => c.resumeSessionId)).toEqual([null, null]);
    expect(row).toMatchObject({ resume_reason: "forced_fresh", compacted: false });
  });
});

describe("runTask: a comment the session read was edited (a rewind)", () => {
  /** An agent whose CLI rewinds (Claude Code's --resume-session-at). */
  class RewindingAgent extends FakeAgent {
    override canRewind() {
      return true;
    }
  }
  /** A run that entered its session at `entry` (what the CLI's transcript says). */
  const entered =
    (sessionId: string, entry: string | undefined): Script =>
    async (req) => ({ ...(await ok(sessionId)(req)), ...(entry ? { entry } : {}) });
  /** The comment a finished turn was asked in, as intake records it. */
  const askedIn = (taskId: unknown, source: string, body: string) =>
    pool.query(
      `INSERT INTO task_comments (source, agent, task_id, comment_id, author, url, body)
       VALUES ($1, 'tether', $2, NULL, 'alice', $3, $4)`,
      [source, taskId, `https://example.test/${source}`, body],
    );
  /** Intake's bump of the key's epoch for an edit of `source`. */
  const edited = (epoch: number, source: string, body: string) =>
    pool.query(
      `WITH e AS (INSERT INTO history_epochs (repo_id, issue_number, agent, epoch)
                  VALUES (1, $1, 'tether', $2)
                  ON CONFLICT (repo_id, issue_number, agent) DO UPDATE SET epoch = EXCLUDED.epoch)
       INSERT INTO history_edits (repo_id, issue_number, agent, epoch, source, deleted, body)
       VALUES (1, $1, 'tether', $2, $3, false, $4)`,
      [issue, epoch, source, body],
    );
  const sessionRow = async (id: string) =>
    (await pool.query("SELECT state, history_epoch FROM sessions WHERE session_id = $1", [id]))
      .rows[0];

  /** Three turns in session `id`: fresh, then two resumed ones that entered at m-2 and m-3. */
  async function threeTurns(agent: FakeAgent, thread: ReturnType<typeof fakeThread>) {
    const one = await turn(agent, thread);
    await askedIn(one.id, `comment:${issue}-1`, "@tether first");
    const two = await turn(agent, thread);
    await askedIn(two.id, `comment:${issue}-2`, "@tether second, old words");
    const three = await turn(agent, thread);
    await askedIn(three.id, `comment:${issue}-3`, "@tether third");
    return { one, two, three };
  }

  it("resumes at the message before the edited comment, sends it and what came after again, and moves the session's epoch on", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new RewindingAgent([
      entered("s-rw1", undefined),
      entered("s-rw1", "m-2"),
      entered("s-rw1", "m-3"),
      entered("s-rw1", "m-2"),
      entered("s-rw1", "m-5"),
    ]);
    const { one, two, three } = await threeTurns(agent, thread);
    expect([one.session_entry, two.session_entry, three.session_entry]).toEqual([
      null,
      "m-2",
      "m-3",
    ]);
    await edited(1, `comment:${issue}-2`, "@tether second, NEW words");
    const four = await turn(agent, thread, { trigger_body: "@tether fourth" });
    expect(four).toMatchObject({
      resume_decision: "resume",
      resume_reason: "rewound",
      session_id: "s-rw1",
      rewound_from: two.id,
      session_entry: "m-2",
    });
    const call = agent.calls[3]!;
    expect(call.resumeSessionId).toBe("s-rw1");
    expect(call.resumeAt).toBe("m-2");
    expect(call.prompt).toContain("This conversation was rewound");
    expect(call.prompt).toContain("second, NEW words");
    expect(call.prompt).toContain("@tether third");
    expect(call.prompt).not.toContain("old words");
    expect(call.prompt.indexOf("third")).toBeLessThan(call.prompt.indexOf("fourth"));
    expect(await sessionRow("s-rw1")).toEqual({ state: "active", history_epoch: 1 });
    // The next turn resumes it as it is.
    const five = await turn(agent, thread);
    expect(five).toMatchObject({ resume_reason: "resumed", session_id: "s-rw1" });
    expect(agent.calls[4]!.resumeAt).toBeUndefined();
  });

  it("a run that did not enter where asked leaves the old text possibly in the session: it is retired", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new RewindingAgent([
      entered("s-rw2", undefined),
      entered("s-rw2", "m-2"),
      entered("s-rw2", "m-3"),
      entered("s-rw2", "m-3"), // the CLI went on from the end after all
      ok("s-rw3"),
    ]);
    await threeTurns(agent, thread);
    await edited(1, `comment:${issue}-2`, "@tether second, NEW words");
    const four = await turn(agent, thread);
    expect(four).toMatchObject({ resume_reason: "rewound", session_id: "s-rw2" });
    expect(await sessionRow("s-rw2")).toEqual({ state: "retired", history_epoch: 0 });
    const five = await turn(agent, thread);
    expect(five).toMatchObject({ resume_decision: "fresh", resume_reason: "poisoned" });
  });

  it("a CLI that cannot rewind starts fresh, as before (history_edited)", async () => {
    issue++;
    const thread = fakeThread();
    const agent = new FakeAgent([
      entered("s-rw4", undefined),
      entered("s-rw4", "m-2"),
      entered("s-rw4", "m-3"),
      ok("s-rw5"),
    ]);
    await threeTurns(agent, thread);
    await edited(1, `comment:${issue}-2`, "@tether second, NEW words");
    const four = await turn(agent, thread);
    expect(four).toMatchObject({ resume_decision: "fresh", resume_reason: "history_edited" });
    expect(agent.calls[3]!.resumeAt).toBeUndefined();
  });
});
