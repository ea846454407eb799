/**
 * The turn's resume decision: what the key's history, the config and this runtime say (resume
 * session X, or fresh, with a reason code), and its record on the task.
 */
import { findCli } from "../../cli-registry.js";
import {
  decideResume,
  type PriorSession,
  type ResumeDecision,
  type TranscriptState,
} from "../../core/resume-decision.js";
import type { Task } from "../../core/task.js";
import type { CliKind, ResumeSettings } from "../ports.js";
import type { RunTaskDeps } from "./turn.js";
import { gatherResumeInput, type ResumeSources } from "../../core/resume-inputs.js";
import type { TaskKey } from "../../core/task.js";
import type { TurnJournal } from "../../core/turn-journal.js";
import type { TurnHistory } from "../../core/turn-history.js";

/** What the decision asks: the CLI (by way of the agent) and the key's history. */
type Deps = Pick<RunTaskDeps, "agent" | "runtimeId"> & {
  store: Pick<TurnHistory, "sessionById" | "epoch" | "knownWindow" | "rewindFacts">;
};

type DecideInput = Omit<Parameters<typeof decide>[1], "workDir" | "workDirExists">;

/**
 * The turn's first decision (`/from <agent>`: a fork of that agent's session, else the key's
 * own), recorded on the task before anything runs. Null: the lease was lost.
 */
export async function decideTurn(
  deps: Deps,
  d: DecideInput & {
    journal: TurnJournal;
    /** The key's working directory for this turn, and whether it existed before any clone. */
    ws: { workDir: string; workDirExists: boolean };
    log: RunTaskDeps["log"];
  },
): Promise<ResumeDecision | null> {
  const { task, cli, prior, epoch, log } = d;
  const { workDir, workDirExists } = d.ws;
  const decision =
    (await decideFork(deps, { task, cli, policy: d.policy, now: d.now })) ??
    (await decide(deps, { ...d, workDir, workDirExists }));
  log.info(
    { decision: decision.kind, reason: decision.reason, prior: prior?.sessionId },
    "resume decision",
  );
  const recorded = await record(d.journal, log, task, {
    decision,
    isFollowUp: prior !== null,
    epoch,
    workDir,
    retriedFresh: false,
    cli,
  });
  return recorded ? decision : null;
}

export async function decide(
  deps: Deps,
  d: {
    key: TaskKey;
    task: Task;
    cli: CliKind;
    policy: ResumeSettings;
    prior: PriorSession | null;
    epoch: number;
    workDir: string;
    workDirExists: boolean;
    now: () => Date;
  },
): Promise<ResumeDecision> {
  const { key, task, cli, policy, prior, epoch, workDir, workDirExists, now } = d;
  const input = await gatherResumeInput(deps.store, runnerSources(deps), {
    key,
    prior,
    epoch,
    cli,
    policy,
    forceFresh: task.forceFresh,
    requestedModel: task.requestedModel,
    workDir,
    workDirExists,
    now,
  });
  return decideResume(input);
}

/** The resume decision's sources on a runner: its own CLI, asked. */
function runnerSources(deps: Pick<RunTaskDeps, "agent" | "runtimeId">): ResumeSources {
  const { agent } = deps;
  return {
    runtimeId: deps.runtimeId,
    cliCanResume: (cli) => agent.canResume(cli),
    cliVersion: (cli) => agent.cliVersion(cli).catch(() => null),
    canCompact: (cli) => agent.canCompact(cli),
    canRewind: (cli) => agent.canRewind?.(cli) ?? false,
    // Where the session's transcript is (Claude's transcript or Codex's rollout, in the portable
    // store), asked of its own CLI only: a Claude transcript means nothing to Codex. Whether this
    // runner can read it is a question for the same CLI's version.
    transcript: async (key, prior, cli) =>
      prior.cli === cli
        ? agent
            .transcriptState(key, prior.sessionId, cli)
            .catch((): TranscriptState => ({ where: "none" }))
        : undefined,
  };
}

/**
 * `/from <agent>`: the turn starts as a fork of another agent's session on the issue, when the
 * resume guards hold for that session as they would for its own agent (without compaction, which
 * would change it). Only a CLI whose registry entry says it forks. Null: the task asks for no fork.
 */
export async function decideFork(
  deps: Deps,
  d: { task: Task; cli: CliKind; policy: ResumeSettings; now: () => Date },
): Promise<ResumeDecision | null> {
  const { task, cli } = d;
  if (!task.forkSessionId) return null;
  const source = await deps.store.sessionById(task.forkSessionId);
  if (!source) return { kind: "fresh", reason: "no_prior_session", priorSessionId: null };
  if (!findCli(cli)?.forks)
    return { kind: "fresh", reason: "runtime_mismatch", priorSessionId: source.sessionId };
  const decided = await decide(deps, {
    key: source.key,
    task: { ...task, forceFresh: false },
    cli,
    policy: { ...d.policy, compact: false },
    prior: source,
    epoch: await deps.store.epoch(source.key),
    // Only a session from before the shared store depends on its directory: another key's.
    workDir: source.workDir ?? "",
    workDirExists: false,
    now: d.now,
  });
  // A fork is not rewound: a source whose read comment changed is not forked, as before rewinds.
  if (decided.kind === "resume" && decided.rewind)
    return { kind: "fresh", reason: "history_edited", priorSessionId: source.sessionId };
  return decided.kind === "resume"
    ? { ...decided, reason: "forked", fork: true, forkFrom: source.key }
    : decided;
}

/** The decision `r.decision`, written in the turn's journal. False: the lease was lost. */
export async function record(
  journal: TurnJournal,
  log: RunTaskDeps["log"],
  task: Task,
  r: {
    decision: ResumeDecision;
    isFollowUp: boolean;
    epoch: number;
    workDir: string;
    retriedFresh: boolean;
    cli: CliKind;
  },
): Promise<boolean> {
  const { decision: d, isFollowUp, epoch, workDir, retriedFresh, cli } = r;
  const ok = await journal.decided({
    cli,
    decision: d.kind,
    reason: d.reason,
    resumeSessionId: d.kind === "resume" ? d.sessionId : d.priorSessionId,
    isFollowUp,
    historyEpoch: epoch,
    workDir,
    retriedFresh,
    rewoundFrom: d.kind === "resume" && d.rewind ? d.rewind.fromTaskId : null,
  });
  if (!ok)
    log.warn(
      { task: task.id },
      "lease lost before the run started; leaving the task to its new owner",
    );
  return ok;
}
