/**
 * The body of a turn's answer: the agent's reply (with what became of its changes) or what
 * went wrong, and the footer with the decision, the session and what the turn cost.
 */
import type { ResumeDecision } from "../../core/resume-decision.js";
import { renderChanges, type PublishReport } from "../../publish/report.js";
import type { CacheTtl } from "../../core/settings.js";
import type { Usage } from "../../core/task.js";
import type { PlanTurn } from "../../core/plan-turn.js";
import type { Task } from "../../core/task.js";
import type { AgentRunResult, AgentSettings, CliKind } from "../ports.js";
import { renderAnswer, renderFailure, type FooterFacts } from "../render/thread-comments.js";
import type { CollectedImages } from "./turn-images.js";
import { renderReviewLine, type ReviewOutcome } from "./review-step.js";

export function answerBody(a: {
  task: Task;
  settings: AgentSettings;
  cli: CliKind;
  decision: ResumeDecision;
  result: AgentRunResult;
  /** The turn's usage, the compaction before it included. */
  usage: Usage | null;
  /** What the conversation had cost before this turn, as the footer counts it. */
  spentBefore: number;
  published: PublishReport | null;
  /** The review the turn's line comments were posted in (a pull request turn). */
  review?: ReviewOutcome | null;
  /** The prompt cache's lifetime the turn asked for; null: the CLI's own (Codex). */
  cacheTtl?: CacheTtl | null;
  /** The conversation's dashboard page, for the footer (TETHER_PUBLIC_URL set). */
  chainUrl?: string;
  /** A plan turn, or the `/go` turn after one (core/plan-turn.ts). */
  plan?: PlanTurn;
  /** The images the run was shown, and those left out. */
  images?: CollectedImages;
}): string {
  const { task, settings, cli, decision, result, usage, spentBefore, published } = a;
  const planned = a.plan?.plan === true;
  const extra = [
    ...(planned && result.outcome === "success" ? [planNote(settings)] : []),
    ...(published ? [renderChanges(published)] : []),
    ...(a.review ? [renderReviewLine(a.review)] : []),
  ].join("\n\n");
  const model = usage?.model ?? settings.model;
  const footer: FooterFacts = {
    ...footerOf(decision, result.sessionId, usage),
    ...(model ? { model: modelFacts(task, model) } : {}),
    ...(a.cacheTtl && usage ? { cacheTtl: a.cacheTtl } : {}),
    ...(a.chainUrl ? { chainUrl: a.chainUrl } : {}),
    ...(task.trigger === "schedule" ? { scheduled: true } : {}),
    ...(a.plan?.plan ? { plan: "plan" as const } : {}),
    ...(a.plan?.plan === false && a.plan.approved ? { plan: "approved" as const } : {}),
    ...(a.images && (a.images.images.length || a.images.skipped.length)
      ? { images: { shown: a.images.images.length, skipped: a.images.skipped } }
      : {}),
    ...(result.mcp?.failed.length ? { mcpFailed: result.mcp.failed } : {}),
    ...(result.outcome === "turn_limit" && settings.turnLimitUsd !== undefined
      ? { turnLimitUsd: settings.turnLimitUsd }
      : {}),
    ...(settings.conversationLimitUsd !== undefined || settings.turnLimitUsd !== undefined
      ? {
          conversation: {
            spentUsd: spentBefore + (usage?.costUsd ?? 0),
            ...(settings.conversationLimitUsd !== undefined
              ? { limitUsd: settings.conversationLimitUsd }
              : {}),
          },
        }
      : {}),
  };
  return result.outcome === "success"
    ? renderAnswer(task.id, result.text ?? "", footer, extra)
    : renderFailure(
        {
          outcome: result.outcome,
          detail: result.detail,
          taskId: task.id,
          timeoutMinutes: settings.timeoutMinutes,
          stallMinutes: settings.stallMinutes,
          agent: task.agent,
          ...(settings.turnLimitUsd !== undefined ? { turnLimitUsd: settings.turnLimitUsd } : {}),
          ...(usage ? { costUsd: usage.costUsd } : {}),
          lastText: result.outcome === "turn_limit" ? result.text : null,
          cli,
          ...(a.review ? { extra: renderReviewLine(a.review) } : {}),
        },
        footer,
      );
}

/** After a plan turn's answer: what was (not) done, and how to go on. */
function planNote(settings: AgentSettings): string {
  const mention = settings.mention ?? `@${settings.name}`;
  return (
    `📝 **This is a plan**: the agent ran read-only and nothing it wrote was kept or published. ` +
    `Reply \`${mention} /go\` (with more words if you like) to carry it out in this same session, ` +
    `or comment \`${mention} …\` to change the plan first.`
  );
}

/**
 * A CI turn's own model is the CI loop's escalation (intake chose it by the attempt); any other
 * turn's is a comment's `/model`.
 */
function modelFacts(task: Task, name: string): NonNullable<FooterFacts["model"]> {
  const requested = task.requestedModel !== null;
  return { name, requested, ...(requested && task.trigger === "ci" ? { escalated: true } : {}) };
}

export function footerOf(
  d: ResumeDecision,
  sessionId: string | null,
  usage: Usage | null,
): FooterFacts {
  return {
    resumed: d.kind === "resume",
    reason: d.reason,
    sessionId,
    usage,
    ...(d.smallerWindow ? { smallerWindow: true } : {}),
  };
}
