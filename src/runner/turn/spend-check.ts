/**
 * The spend limits, checked before a turn starts: what its conversation, repository and
 * installation have spent, and which limits that reaches (src/spend/spend-limits.ts).
 */
import type { ConversationSpend, TurnHistory } from "../../core/turn-history.js";
import type { Task } from "../../core/task.js";
import { monthStart, reachedLimits, type ReachedLimit } from "../../spend/spend-limits.js";
import type { AgentSettings, SpendSettings } from "../ports.js";

export interface SpendCheck {
  reached: ReachedLimit[];
  /** The conversation's spend before this turn (for the answer's footer). */
  conversation: ConversationSpend;
}

export async function checkSpend(
  history: Pick<TurnHistory, "conversationSpend" | "spentSince">,
  task: Task,
  agent: AgentSettings,
  spend: SpendSettings,
  now: Date,
): Promise<SpendCheck> {
  const from = monthStart(now);
  const [conversation, repositoryMonthUsd, installationMonthUsd] = await Promise.all([
    history.conversationSpend(
      { repoId: task.repoId, repo: task.repo, issueNumber: task.issueNumber, agent: task.agent },
      { exceptTaskId: task.id, freshResets: spend.freshResetsConversation },
    ),
    spend.repositoryMonthlyUsd === undefined
      ? undefined
      : history.spentSince({ repoId: task.repoId }, from),
    spend.installationMonthlyUsd === undefined
      ? undefined
      : history.spentSince({ installationId: task.installationId }, from),
  ]);
  const reached = reachedLimits(
    {
      freshResetsConversation: spend.freshResetsConversation,
      ...(agent.conversationLimitUsd !== undefined
        ? { conversationLimitUsd: agent.conversationLimitUsd }
        : {}),
      ...(spend.repositoryMonthlyUsd !== undefined
        ? { repositoryMonthlyUsd: spend.repositoryMonthlyUsd }
        : {}),
      ...(spend.installationMonthlyUsd !== undefined
        ? { installationMonthlyUsd: spend.installationMonthlyUsd }
        : {}),
    },
    {
      conversationUsd: conversation.countedUsd,
      ...(repositoryMonthUsd !== undefined ? { repositoryMonthUsd } : {}),
      ...(installationMonthUsd !== undefined ? { installationMonthUsd } : {}),
    },
    { forceFresh: task.forceFresh },
  );
  return { reached, conversation };
}
