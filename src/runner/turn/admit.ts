/**
 * Whether a turn runs at all, and the refusal it ends with when not: the config must read, the
 * task's agent must still be configured, and no spend limit of its conversation, repository or
 * installation may be reached (a spend refusal is not a turn: no resume decision is recorded).
 */
import type { Logger } from "../../log.js";
import type { Outcome } from "../../core/task.js";
import type { Task } from "../../core/task.js";
import type { Finish } from "../../core/turn-journal.js";
import type { AgentSettings, ConfigResult, RepoSettings } from "../ports.js";
import { renderRefusal, taskMarker } from "../render/thread-comments.js";
import { checkSpend } from "./spend-check.js";
import type { RunTaskDeps } from "./turn.js";

/** Why a task ends without its run: its answer in the thread, and what its row records. */
export interface Refusal {
  answer: string;
  status: Exclude<Finish["status"], "succeeded">;
  outcome: Exclude<Outcome, "success">;
  /** The task's failure reason. */
  reason: string;
  /** The spend limits reached (told to onRefused once the task is finished). */
  limits?: string[];
}

export type Admission =
  | {
      settings: AgentSettings;
      config: RepoSettings;
      /** What the answer's footer counts this turn against (0 after a resetting `/fresh`). */
      spentBefore: number;
    }
  | { refused: Refusal };

/** A refusal of a turn that failed before it ran, with `message` as its answer and its reason. */
export function failedBefore(task: Task, message: string): Refusal {
  return {
    answer: `⚠️ ${message}\n${taskMarker(task.id)}`,
    status: "failed",
    outcome: "failed",
    reason: message,
  };
}

export async function admit(
  deps: Pick<RunTaskDeps, "store">,
  task: Task,
  config: ConfigResult,
  log: Logger,
  now: () => Date,
): Promise<Admission> {
  if (!config.ok) return { refused: failedBefore(task, config.message) };
  const configured: AgentSettings | undefined = config.settings.agents[task.agent];
  if (!configured)
    return {
      refused: failedBefore(
        task,
        `Agent "${task.agent}" is no longer configured in .github/tether.yml, so this request was not run.`,
      ),
    };
  // `/model <name>` (checked by intake against the agent's `models`): this turn only.
  const settings = task.requestedModel ? { ...configured, model: task.requestedModel } : configured;
  const spendSettings = config.settings.spend;
  const spend = await checkSpend(deps.store, task, settings, spendSettings, now());
  if (spend.reached.length) {
    const limits = spend.reached.map(
      (l) => `${l.kind}: spent $${l.spentUsd.toFixed(4)} of $${String(l.limitUsd)}`,
    );
    log.info({ limits }, "a spend limit is reached; the turn is not run");
    const answer = renderRefusal({
      taskId: task.id,
      agent: task.agent,
      mention: settings.mention ?? `@${task.agent}`,
      reached: spend.reached,
      freshResets: spendSettings.freshResetsConversation,
      now: now(),
    });
    return {
      refused: {
        answer,
        status: "cancelled",
        outcome: "limit_refused",
        reason: `not run: ${limits.join("; ")}`,
        limits: spend.reached.map((l) => l.kind),
      },
    };
  }
  // The count starts again at a `/fresh` turn when the config says so.
  const resets = spendSettings.freshResetsConversation && task.forceFresh;
  return {
    settings,
    config: config.settings,
    spentBefore: resets ? 0 : spend.conversation.countedUsd,
  };
}
