/**
 * Everything the resume decision (src/core/resume-decision.ts, pure) is decided from, gathered in
 * one place for both who ask: the turn about to run (src/runner/turn/turn-decision.ts, with its
 * runner's own CLI at hand) and `/status` saying what the next turn would do
 * (src/runner/render/describe-next-turn.ts, from the web process, which has no CLI and answers
 * from what Postgres and the registry say). What differs between them is only where the CLI's
 * answers come from (`ResumeSources`, the caller's); what the key's history says, both read
 * through the same port (turn-history.ts).
 */
import type { PriorSession, ResumeInput, TranscriptState } from "./resume-decision.js";
import type { TaskKey } from "./task.js";
import type { CliKind, ResumeSettings } from "./settings.js";
import type { TurnHistory } from "./turn-history.js";

/** What the CLI the turn runs on says, as the asker can know it. */
export interface ResumeSources {
  /** The runtime the turn runs on. */
  runtimeId: string;
  cliCanResume(cli: CliKind): Promise<boolean>;
  /** That CLI's version here; null when it did not say. */
  cliVersion(cli: CliKind): Promise<string | null>;
  /** Whether it compacts a session on request (else an over-budget session is not resumed). */
  canCompact(cli: CliKind): boolean;
  /** Whether it resumes a session at an earlier message (a rewind). */
  canRewind(cli: CliKind): boolean;
  /** Where the prior session's transcript is; undefined: the CLI's own store here (`local`). */
  transcript(key: TaskKey, prior: PriorSession, cli: CliKind): Promise<TranscriptState | undefined>;
}

export async function gatherResumeInput(
  history: Pick<TurnHistory, "knownWindow" | "rewindFacts">,
  src: ResumeSources,
  d: {
    key: TaskKey;
    prior: PriorSession | null;
    /** The key's history epoch now. */
    epoch: number;
    cli: CliKind;
    policy: ResumeSettings;
    forceFresh: boolean;
    /** `/model`: the model the turn asks for; null: the agent's. */
    requestedModel: string | null;
    workDir: string;
    workDirExists: boolean;
    /** Read last, as the decision is taken. */
    now: () => Date;
  },
): Promise<ResumeInput> {
  const { key, prior, epoch, cli, policy } = d;
  const cliCanResume = await src.cliCanResume(cli);
  const cliVersion = await src.cliVersion(cli);
  const transcript = prior ? await src.transcript(key, prior, cli) : undefined;
  // `/model`: the window of the model asked for, as the CLI last reported it.
  const requestedWindow =
    prior && d.requestedModel ? await history.knownWindow(d.requestedModel) : null;
  // A comment the session read changed since it was pinned: what a rewind is decided from.
  const cliCanRewind = src.canRewind(cli);
  const rewind =
    prior && cliCanRewind && prior.historyEpoch !== epoch
      ? await history.rewindFacts(key, prior.sessionId, prior.historyEpoch, epoch)
      : undefined;
  return {
    prior,
    forceFresh: d.forceFresh,
    policy: {
      enabled: policy.enabled,
      ttlMs: policy.ttlHours * 3600_000,
      contextBudget: policy.contextBudget,
      // Only a CLI that compacts on request (Claude's `/compact`; not Codex) compacts.
      compact: (policy.compact ?? true) && src.canCompact(cli),
    },
    runtimeId: src.runtimeId,
    cli,
    workDir: d.workDir,
    workDirExists: d.workDirExists,
    historyEpoch: epoch,
    cliCanResume,
    cliCanRewind,
    ...(rewind ? { rewind } : {}),
    requestedWindow,
    cliVersion,
    ...(transcript === undefined ? {} : { transcript }),
    now: d.now(),
  };
}
