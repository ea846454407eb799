/**
 * The turn writes through its journal (src/core/turn-journal.ts), not through Postgres: a turn's
 * agent step runs here against a journal kept in memory, with a stand-in agent, and what it
 * wrote down is read back in order. No database, no CLI.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { Task } from "../../src/core/task.js";
import type { TurnJournal } from "../../src/core/turn-journal.js";
import type { ResumeDecision } from "../../src/core/resume-decision.js";
import {
  failedRun,
  type Agent,
  type AgentRunRequest,
  type AgentRunResult,
} from "../../src/runner/ports.js";
import { recordRunSession, runAgent, type AgentTurn } from "../../src/runner/turn/run-agent.js";

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
  };
}

const key = { repoId: 7, repo: "acme/widgets", issueNumber: 3, agent: "tether" };

/** An agent whose runs answer from `script` in turn, each told its request first. */
function scriptedAgent(
  script: ((req: AgentRunRequest) => Promise<AgentRunResult>)[],
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
      async (req) => {
        await req.onSession("s-new", "model-x");
        return {
          outcome: "success",
          sessionId: "s-new",
          text: "done",
          usage: null,
          contextWindow: 200_000,
          toolRan: true,
          detail: null,
        };
      },
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
