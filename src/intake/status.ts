import { shortSessionId } from "../core/redact.js";
import { findCli } from "../cli-registry.js";
import type { AgentConfig, RepoConfig } from "../config/repo-config.js";
import type { Pool } from "../db/pool.js";
import type { PriorSession } from "../core/resume-decision.js";
import { priorSession } from "../sql/sessions.js";
import type { ConversationSpend } from "../core/turn-history.js";
import { conversationSpend, conversationTurns, spentSince } from "../sql/spend.js";
import {
  agentsOnIssue,
  readKeyStates,
  type KeyState,
  type TaskSummary,
} from "../sql/tasks/read.js";
import { estimateSavings, type SavingsEstimate } from "../spend/savings-estimate.js";
import { formatLimit, formatSpent, monthName, monthStart } from "../spend/spend-limits.js";

export interface StatusRequest {
  pool: Pool;
  /** The repository's id: what its conversations are keyed by. */
  repoId: number;
  /** `owner/name`, lower case. */
  repo: string;
  issueNumber: number;
  /** The installation the repository belongs to (its monthly spend, when limited). */
  installationId?: number;
  /** The agents the /status comment addressed. */
  agents: string[];
  config: RepoConfig;
  now: Date;
}

/**
 * Renders the /status reply (Markdown). Injectable through AppDeps so the runner can add what
 * the next turn would do (resume or fresh, and why); this default reports what intake knows.
 */
export type DescribeStatus = (req: StatusRequest) => Promise<string>;

/**
 * The keys /status reports on, every agent on the issue: the addressed ones first, then any other
 * with tasks there. Shared with the runner's /status (src/runner/render/describe-next-turn.ts).
 */
export async function issueKeyStates(req: StatusRequest): Promise<KeyState[]> {
  const others = await agentsOnIssue(req.pool, req.repoId, req.issueNumber);
  const agents = [...new Set([...req.agents, ...others])];
  return readKeyStates(req.pool, req.repoId, req.issueNumber, agents);
}

/** What intake knows of every agent on the issue (issueKeyStates), and its spend. */
export const describeIssueStatus: DescribeStatus = async (req) => {
  const blocks: string[] = [];
  for (const state of await issueKeyStates(req)) {
    const figures = await readSpendFigures(req, state.agent);
    blocks.push(
      [
        renderStatus([state], req.config, req.now),
        ...renderSpend(figures, req.config.agents[state.agent], req.config, req.now),
      ].join("\n"),
    );
  }
  return blocks.join("\n\n");
};

export function renderStatus(states: KeyState[], config: RepoConfig, now: Date): string {
  return states
    .map((s) => {
      const agent = config.agents[s.agent];
      const mention = agent?.mention ?? `@${s.agent}`;
      const lines = [`**\`${mention}\` on this issue**`, ""];
      const on = (t: TaskSummary) => onModel(t, agent?.model);
      if (s.running)
        lines.push(
          `- Running: ${describeTask(s.running, now)}${on(s.running)}${s.running.cancelRequested ? " (stop requested)" : ""}`,
        );
      if (s.queued)
        lines.push(
          `- Queued: ${describeTask(s.queued, now)}${on(s.queued)}${s.queued.forceFresh ? " (fresh session requested)" : ""}`,
        );
      if (!s.running && !s.queued) lines.push("- Idle: nothing running or queued.");
      const last = s.lastSession;
      lines.push(
        last
          ? `- Last session: \`${shortSessionId(last.sessionId)}\` (${last.state}), from task ${last.taskId}${last.model ? `, on \`${last.model}\`` : ""}`
          : "- No session yet: the next turn starts fresh.",
      );
      return lines.join("\n");
    })
    .join("\n\n");
}

// ---------------------------------------------------------------------------------------------
// Spend, context and savings

/** What /status tells of a conversation's cost, from its recorded turns. */
export interface SpendFigures {
  conversation: ConversationSpend;
  savings: SavingsEstimate;
  /** The key's latest session and how full its context was after its last turn. */
  session: Pick<PriorSession, "sessionId" | "contextTokens" | "contextWindow"> | null;
  /** Spent this month, read only when the matching limit is set. */
  repositoryMonthUsd?: number;
  installationMonthUsd?: number;
}

/** The figures of one conversation (and the month's, where limited), from Postgres. */
export async function readSpendFigures(
  req: Pick<
    StatusRequest,
    "pool" | "repoId" | "repo" | "issueNumber" | "installationId" | "config" | "now"
  >,
  agent: string,
): Promise<SpendFigures> {
  const key = { repoId: req.repoId, repo: req.repo, issueNumber: req.issueNumber, agent };
  const spend = req.config.spend;
  const from = monthStart(req.now);
  const [conversation, turns, session, repositoryMonthUsd, installationMonthUsd] =
    await Promise.all([
      conversationSpend(req.pool, key, { freshResets: spend.freshResetsConversation }),
      conversationTurns(req.pool, key),
      priorSession(req.pool, key),
      spend.repositoryMonthlyUsd === undefined
        ? undefined
        : spentSince(req.pool, { repoId: req.repoId }, from),
      spend.installationMonthlyUsd === undefined || req.installationId === undefined
        ? undefined
        : spentSince(req.pool, { installationId: req.installationId }, from),
    ]);
  return {
    conversation,
    savings: estimateSavings(turns),
    session,
    ...(repositoryMonthUsd !== undefined ? { repositoryMonthUsd } : {}),
    ...(installationMonthUsd !== undefined ? { installationMonthUsd } : {}),
  };
}

/** The spend, context and savings lines of one agent's /status block. */
export function renderSpend(
  f: SpendFigures,
  agent: AgentConfig | undefined,
  config: Pick<RepoConfig, "spend" | "resume">,
  now: Date,
): string[] {
  const c = f.conversation;
  const lines: string[] = [];
  const turns = (n: number) => `${n} turn${n === 1 ? "" : "s"}`;
  const reset = config.spend.freshResetsConversation && c.resetAtTask !== null;
  let spent = reset
    ? `- Spend: ${formatSpent(c.countedUsd)} over ${turns(c.countedTurns)} since the \`/fresh\` turn (task ${c.resetAtTask}); ${formatSpent(c.totalUsd)} over ${turns(c.turns)} in all`
    : `- Spend: ${formatSpent(c.totalUsd)} over ${turns(c.turns)}`;
  const limit = agent?.conversationLimitUsd;
  if (limit !== undefined) {
    const left = limit - c.countedUsd;
    spent +=
      left > 0
        ? `; the conversation limit is ${formatLimit(limit)} (${formatSpent(left)} left)`
        : `; the conversation limit of ${formatLimit(limit)} is reached: the next turn will not run`;
  }
  if (agent?.turnLimitUsd !== undefined)
    spent += `; at most ${formatLimit(agent.turnLimitUsd)} a turn`;
  lines.push(`${spent}.`);

  const month = monthName(now);
  if (config.spend.repositoryMonthlyUsd !== undefined && f.repositoryMonthUsd !== undefined)
    lines.push(
      `- This repository: ${formatSpent(f.repositoryMonthUsd)} of its ${formatLimit(config.spend.repositoryMonthlyUsd)} for ${month} (UTC).`,
    );
  if (config.spend.installationMonthlyUsd !== undefined && f.installationMonthUsd !== undefined)
    lines.push(
      `- This installation: ${formatSpent(f.installationMonthUsd)} of its ${formatLimit(config.spend.installationMonthlyUsd)} for ${month} (UTC).`,
    );

  const s = f.session;
  if (s && s.contextTokens !== null) {
    const window = s.contextWindow;
    // What a runner does past the budget: compact the sessions of a CLI that can, drop the others.
    const past =
      config.resume.compact && (findCli(agent?.cli)?.compactPrompt ?? null) !== null
        ? ", compacted first past it"
        : ", started afresh past it";
    const share = window
      ? ` of ${tokens(window)} (${Math.round((100 * s.contextTokens) / window)}%)`
      : "";
    lines.push(
      `- Context: ${tokens(s.contextTokens)} tokens${share} in session \`${shortSessionId(s.sessionId)}\` after its last turn; it is resumed while under ${Math.round(config.resume.contextBudget * 100)}% of the window${past}.`,
    );
  }

  const v = f.savings;
  if (v.resumedTurns > 0) {
    const cold = v.resumedInputTokens + v.savedTokens;
    lines.push(
      `- Resuming saved an estimated ${tokens(v.savedTokens)} billed-equivalent input tokens over ${turns(v.resumedTurns)} (they used ${tokens(v.resumedInputTokens)}; started fresh, about ${tokens(cold)}). Estimated by the savings benchmark's accounting: a fresh start would have sent the earlier prompts and answers again at the full input price (4 bytes a token) instead of reading them from the prompt cache at 0.1×.${
        v.pastCacheTurns > 0
          ? ` ${turns(v.pastCacheTurns)} came after the prompt cache's lifetime had run out (the agent's \`cacheTtl\`): those saved no tokens, only the conversation.`
          : ""
      }`,
    );
  } else if (c.turns > 0) lines.push("- Resuming has saved nothing yet: no turn here resumed.");
  return lines;
}

function tokens(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(2)}M`;
  if (n >= 10_000) return `${(n / 1000).toFixed(1).replace(/\.0$/, "")}k`;
  return n.toLocaleString("en-US");
}

/** The model a turn runs on: a `/model` (or a CI turn's `escalate`) for it, else the agent's. */
export function turnModel(t: TaskSummary | undefined, agentModel: string | undefined) {
  return t?.requestedModel ?? agentModel;
}

function onModel(t: TaskSummary, agentModel: string | undefined): string {
  const model = turnModel(t, agentModel);
  if (!model) return "";
  if (!t.requestedModel) return `, on \`${model}\``;
  return t.trigger === "ci"
    ? `, on \`${model}\` (\`escalate\`: after a failed CI attempt)`
    : `, on \`${model}\` (/model, this turn only)`;
}

function describeTask(t: TaskSummary, now: Date): string {
  const since = t.startedAt ?? t.createdAt;
  const verb = t.startedAt ? "started" : "queued";
  const comments = t.comments > 1 ? `, answering ${t.comments} comments` : "";
  return `task ${t.id} for [${t.triggerAuthor}'s comment](${t.triggerUrl}), ${verb} ${ago(since, now)}${comments}`;
}

function ago(then: Date, now: Date): string {
  const s = Math.max(0, Math.round((now.getTime() - then.getTime()) / 1000));
  if (s < 90) return `${s} s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}
