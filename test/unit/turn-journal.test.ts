/**
 * The turn writes through its journal and reads through its history (src/core/turn-journal.ts,
 * turn-history.ts), not through Postgres: a turn's agent step, and then a whole turn, run here
 * against a store kept in memory, with a stand-in agent, and what it wrote down is read back in
 * order. No database, no CLI.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import type { Task, TaskComment, TaskKey, TaskStatus } from "../../src/core/task.js";
import type { TurnJournal, TurnStore } from "../../src/core/turn-journal.js";
import type { TurnHistory } from "../../src/core/turn-history.js";
import type { PriorSession, ResumeDecision } from "../../src/core/resume-decision.js";
import {
  failedRun,
  type Agent,
  type AgentRunRequest,
  type AgentRunResult,
} from "../../src/runner/ports.js";
import { recordRunSession, runAgent, type AgentTurn } from "../../src/runner/turn/run-agent.js";
import { runTask } from "../../src/runner/turn/run-task.js";
import { decideTurn } from "../../src/runner/turn/turn-decision.js";
import { fakeThread, fakeWorkspace } from "../helpers/runner-fakes.js";

type Entry = [keyof TurnJournal, ...unknown[]];

/** A journal that keeps every entry in order; `leaseHeld` false: every leased write is refused. */
function memoryJournal(leaseHeld = true): TurnJournal & { entries: Entry[] } {
  const entries: Entry[] = [];
  const note =
    <R>(name: keyof TurnJournal, result: R) =>
    async (...args: unknown[]): Promise<R> => {
      entries.push([name, ...args]);
      return result;
    };
  return {
    entries,
    decided: note("decided", leaseHeld),
    plannedOnly: note("plannedOnly", leaseHeld),
    sessionPinned: note("sessionPinned", undefined),
    sessionMoved: note("sessionMoved", undefined),
    sessionEntered: note("sessionEntered", leaseHeld),
    sessionUsed: note("sessionUsed", undefined),
    sessionMarked: note("sessionMarked", undefined),
    sessionRewound: note("sessionRewound", undefined),
    trackingComment: note("trackingComment", undefined),
    toolRan: note("toolRan", undefined),
    published: note("published", leaseHeld),
    requeued: note("requeued", leaseHeld),
    finished: note("finished", leaseHeld),
    eventStreamed: note("eventStreamed", undefined),
    eventsTrimmed: note("eventsTrimmed", { events: 0, toolCalls: 0 }),
    eventsDropped: note("eventsDropped", undefined),
  };
}

/** A finished turn of a key as the history keeps it. */
interface KeptTurn {
  key: TaskKey;
  taskId: number;
  sessionId: string | null;
  entry: string | null;
  /** The comments it was asked in. */
  comments: Array<TaskComment & { source: string }>;
  planTurn: boolean;
  status: TaskStatus;
  costUsd: number;
}

/** What the memory keeps: sessions (a key's latest is its prior), turns, epochs, edits. */
interface Kept {
  sessions: Array<PriorSession & { key: TaskKey }>;
  turns: KeptTurn[];
  /** The comments of tasks not run yet, by task id. */
  queued: Map<number, TaskComment[]>;
  edits: Array<{ key: TaskKey; epoch: number; source: string; deleted: boolean; body: string }>;
}

const sameKey = (a: TaskKey, b: TaskKey) =>
  a.repoId === b.repoId && a.issueNumber === b.issueNumber && a.agent === b.agent;

/** The history (src/core/turn-history.ts) read from memory. */
function memoryHistory(kept: Kept): TurnHistory {
  const editsOf = (key: TaskKey) => kept.edits.filter((e) => sameKey(e.key, key));
  const turnsOf = (key: TaskKey) => kept.turns.filter((t) => sameKey(t.key, key));
  return {
    taskComments: async (taskId) =>
      kept.queued.get(taskId) ?? kept.turns.find((t) => t.taskId === taskId)?.comments ?? [],
    priorSession: async (key) => kept.sessions.filter((s) => sameKey(s.key, key)).at(-1) ?? null,
    sessionById: async (id) => kept.sessions.find((s) => s.sessionId === id) ?? null,
    epoch: async (key) => Math.max(0, ...editsOf(key).map((e) => e.epoch)),
    rewindFacts: async (key, sessionId, from, to) => ({
      turns: turnsOf(key)
        .filter((t) => t.sessionId === sessionId)
        .map((t) => ({
          taskId: t.taskId,
          entry: t.entry,
          sources: t.comments.map((c) => c.source),
          compacted: false,
          rewoundFrom: null,
        })),
      edits: editsOf(key)
        .filter((e) => e.epoch > from && e.epoch <= to)
        .map(({ epoch, source, deleted }) => ({ epoch, source, deleted })),
    }),
    knownWindow: async () => null,
    resentComments: async (key, sources) =>
      sources.flatMap((source) => {
        const asked = turnsOf(key)
          .flatMap((t) => t.comments)
          .find((c) => c.source === source);
        const edit = editsOf(key)
          .filter((e) => e.source === source)
          .at(-1);
        if (!asked || edit?.deleted) return [];
        return [{ ...asked, body: edit?.body ?? asked.body }];
      }),
    ignoredEditors: async () => new Map(),
    lastTurn: async (key, before) => {
      const t = turnsOf(key)
        .filter((x) => before === undefined || x.taskId < before)
        .at(-1);
      return t ? { planTurn: t.planTurn, status: t.status } : null;
    },
    conversationSpend: async (key, opts) => {
      const turns = turnsOf(key).filter((t) => t.taskId !== opts.exceptTaskId);
      const totalUsd = turns.reduce((sum, t) => sum + t.costUsd, 0);
      const n = turns.length;
      return { totalUsd, turns: n, countedUsd: totalUsd, countedTurns: n, resetAtTask: null };
    },
    spentSince: async () => 0,
    transcriptHead: async () => null,
    conversation: async () => null,
  };
}

/** A store in memory: its history is `kept`, every task's journal writes to `journal`. */
function memoryStore(kept: Kept, journal: TurnJournal): TurnStore {
  return { ...memoryHistory(kept), journal: () => journal };
}

const key = { repoId: 7, repo: "acme/widgets", issueNumber: 3, agent: "tether" };

/** An agent whose runs answer from `script` in turn, each told its request first. */
function scriptedAgent(
  script: ((req: AgentRunRequest) => Promise<AgentRunResult>)[],
  over: Partial<Agent> = {},
): Agent & { runs: AgentRunRequest[] } {
  const runs: AgentRunRequest[] = [];
  return {
    runs,
    canResume: async () => true,
    cliVersion: async () => "1.0.0",
    canCompact: () => false,
    canRewind: () => false,
    transcriptState: async () => ({ where: "none" }),
    stage: () => null,
    run: async (req) => {
      runs.push(req);
      const next = script.shift();
      if (!next) throw new Error("the agent ran more often than scripted");
      return next(req);
    },
    ...over,
  };
}

/** A run that names its session `sessionId` the moment it starts, and succeeds. */
function succeeds(sessionId: string, over: Partial<AgentRunResult> = {}) {
  return async (req: AgentRunRequest): Promise<AgentRunResult> => {
    await req.onSession(sessionId, "model-x");
    const ran = { sessionId, text: "done", usage: null, contextWindow: 200_000, detail: null };
    return { outcome: "success", ...ran, toolRan: false, ...over };
  };
}

function turnOf(agent: Agent, journal: TurnJournal): AgentTurn {
  return {
    deps: { runtimeId: "rt-1", agent },
    journal,
    task: { id: 41, ...key } as Task,
    key,
    log: pino({ level: "silent" }),
    signal: new AbortController().signal,
    cli: "claude",
    epoch: 2,
    isFollowUp: true,
    workDir: "/work/acme/widgets/3",
    workspace: {
      issue: {} as AgentTurn["workspace"]["issue"],
      prepared: { dir: "/work/acme/widgets/3" },
      control: null,
      project: null,
    },
    settings: {} as AgentTurn["settings"],
    systemPrompt: "system",
    prompt: async (d) => (d.kind === "resume" ? "go on" : "the whole thread"),
    progress: { onEvent: () => {}, decided: () => {} },
  };
}

const resumeOld: ResumeDecision = { kind: "resume", sessionId: "s-old", reason: "resumed" };

describe("a turn's agent step against an in-memory journal", () => {
  it("writes down the retired session, the fresh retry's decision, its pinned session and its context", async () => {
    const agent = scriptedAgent([
      // The resumed session is refused before any tool ran: the turn retries fresh at once.
      async () => ({ ...failedRun("no conversation found"), outcome: "resume_rejected" }),
      succeeds("s-new", { toolRan: true }),
    ]);
    const journal = memoryJournal();
    const turn = turnOf(agent, journal);
    const ran = await runAgent(turn, resumeOld);
    expect(ran?.result.outcome).toBe("success");
    expect(ran?.decision).toMatchObject({ kind: "fresh", reason: "resume_rejected" });
    expect(agent.runs.map((r) => r.resumeSessionId)).toEqual(["s-old", null]);
    await recordRunSession(turn.deps, journal, turn.log, ran!, null, turn.epoch);

    expect(journal.entries).toEqual([
      ["sessionMarked", "s-old", "retired", "the CLI could not resume it"],
      [
        "decided",
        {
          cli: "claude",
          decision: "fresh",
          reason: "resume_rejected",
          resumeSessionId: "s-old",
          isFollowUp: true,
          historyEpoch: 2,
          workDir: "/work/acme/widgets/3",
          retriedFresh: true,
          rewoundFrom: null,
        },
      ],
      [
        "sessionPinned",
        {
          sessionId: "s-new",
          runtimeId: "rt-1",
          cli: "claude",
          workDir: "/work/acme/widgets/3",
          model: "model-x",
          historyEpoch: 2,
        },
      ],
      ["sessionUsed", "s-new", null, 200_000],
    ]);
  });

  it("stops before the retry when the journal says the lease was lost", async () => {
    const agent = scriptedAgent([
      async () => ({ ...failedRun("no conversation found"), outcome: "resume_rejected" }),
    ]);
    const journal = memoryJournal(false);
    expect(await runAgent(turnOf(agent, journal), resumeOld)).toBeNull();
    expect(agent.runs).toHaveLength(1);
    expect(journal.entries.map(([name]) => name)).toEqual(["sessionMarked", "decided"]);
  });
});

describe("a whole turn against an in-memory store", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-memory-turn-"));
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  const at = new Date("2026-12-01T10:00:00Z");
  const comment = (n: number, body: string) => ({
    source: `comment:${n}`,
    commentId: n,
    author: "alice",
    url: `https://github.com/acme/widgets/issues/3#issuecomment-${n}`,
    body,
    createdAt: at,
    context: [],
  });
  const ran = (taskId: number, entry: string | null, asked: ReturnType<typeof comment>) => ({
    key,
    taskId,
    sessionId: "s-1",
    entry,
    comments: [asked],
    planTurn: false,
    status: "succeeded" as const,
    costUsd: 0.5,
  });
  const task = {
    ...key,
    id: 13,
    installationId: 1,
    threadNumber: 3,
    isPullRequest: false,
    status: "running",
    triggerCommentId: 4,
    triggerAuthor: "alice",
    triggerUrl: comment(4, "").url,
    triggerBody: "@tether fourth",
    trigger: "comment",
    forceFresh: false,
    requestedModel: null,
    forkSessionId: null,
    planRequest: null,
    cancelRequested: false,
    runtimeId: "rt-1",
    sessionId: null,
    trackingCommentId: null,
    answerCommentId: null,
    attempts: 1,
    maxAttempts: 3,
    createdAt: at,
    startedAt: at,
    repoSettings: null,
  } satisfies Task;

  it("reads the key's history through the store: a session whose comment was edited is rewound, the edit sent again", async () => {
    // Three turns in session s-1; the second's comment was edited since (epoch 1).
    const kept: Kept = {
      sessions: [
        {
          key,
          sessionId: "s-1",
          cli: "claude",
          runtimeId: "rt-1",
          workDir: null,
          state: "active",
          historyEpoch: 0,
          lastUsedAt: new Date(),
          contextTokens: 1000,
          contextWindow: 200_000,
        },
      ],
      turns: [
        ran(10, null, comment(1, "@tether first")),
        ran(11, "m-2", comment(2, "@tether second, old words")),
        ran(12, "m-3", comment(3, "@tether third")),
      ],
      queued: new Map([[13, [comment(4, "@tether fourth")]]]),
      edits: [
        { key, epoch: 1, source: "comment:2", deleted: false, body: "@tether second, NEW words" },
      ],
    };
    const journal = memoryJournal();
    const agent = scriptedAgent(
      [
        // It entered the session where it was asked to resume.
        succeeds("s-1", { entry: "m-2" }),
      ],
      {
        canRewind: () => true,
        // The session's transcript is in the shared store, written by this CLI's version.
        cliVersion: async () => "2.0.0",
        transcriptState: async () => ({ where: "store", cliVersion: "2.0.0" }),
      },
    );
    await runTask(
      {
        store: memoryStore(kept, journal),
        log: pino({ level: "silent" }),
        runnerId: "runner-1",
        runtimeId: "rt-1",
        agent,
        workspace: fakeWorkspace(root),
        github: async () => fakeThread(),
        progressIntervalMs: 0,
        now: () => new Date(),
      },
      task,
      new AbortController().signal,
    );

    expect(agent.runs).toHaveLength(1);
    const run = agent.runs[0]!;
    expect(run).toMatchObject({ resumeSessionId: "s-1", resumeAt: "m-2" });
    expect(run.prompt).toContain("second, NEW words");
    expect(run.prompt).toContain("@tether third");
    expect(run.prompt).toContain("@tether fourth");
    expect(run.prompt).not.toContain("old words");
    const entry = (name: keyof TurnJournal) => journal.entries.find(([n]) => n === name);
    expect(entry("decided")?.[1]).toMatchObject({
      decision: "resume",
      reason: "rewound",
      resumeSessionId: "s-1",
      isFollowUp: true,
      historyEpoch: 1,
      rewoundFrom: 11,
    });
    expect(entry("sessionRewound")).toEqual(["sessionRewound", "s-1", 1]);
    expect(entry("finished")?.[1]).toMatchObject({ status: "succeeded", outcome: "success" });
  });
});

describe("a turn's decision against an in-memory store", () => {
  const reviewer: TaskKey = { ...key, agent: "reviewer" };
  const session = (k: TaskKey, sessionId: string, historyEpoch: number) => ({
    key: k,
    sessionId,
    cli: "claude" as const,
    runtimeId: "rt-other",
    workDir: null,
    state: "active" as const,
    historyEpoch,
    lastUsedAt: new Date(),
    contextTokens: null,
    contextWindow: null,
  });
  const edit = (k: TaskKey, epoch: number) => ({
    key: k,
    epoch,
    source: `comment:${epoch}`,
    deleted: false,
    body: "edited",
  });

  it("`/from reviewer` forks the reviewer's session, judged by the reviewer's history epoch", async () => {
    // The reviewer's session is at its key's epoch (2); this key's own epoch (5) is not its.
    const kept: Kept = {
      sessions: [session(reviewer, "s-rev", 2)],
      turns: [],
      queued: new Map(),
      edits: [edit(reviewer, 1), edit(reviewer, 2), edit(key, 5)],
    };
    const journal = memoryJournal();
    const agent = scriptedAgent([], {
      cliVersion: async () => "2.0.0",
      transcriptState: async () => ({ where: "store", cliVersion: "2.0.0" }),
    });
    const decision = await decideTurn(
      { agent, runtimeId: "rt-1", store: memoryHistory(kept) },
      {
        key,
        task: { ...key, id: 20, forkSessionId: "s-rev", forceFresh: false } as Task,
        cli: "claude",
        policy: { enabled: true, ttlHours: 72, contextBudget: 0.8 },
        prior: null,
        epoch: 5,
        ws: { workDir: "/work/acme/widgets/3", workDirExists: false },
        now: () => new Date(),
        log: pino({ level: "silent" }),
        journal,
      },
    );
    expect(decision).toEqual({
      kind: "resume",
      sessionId: "s-rev",
      reason: "forked",
      fork: true,
      forkFrom: reviewer,
    });
    expect(journal.entries).toEqual([
      [
        "decided",
        expect.objectContaining({ decision: "resume", reason: "forked", resumeSessionId: "s-rev" }),
      ],
    ]);
  });
});
