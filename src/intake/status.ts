import type { RepoConfig } from "../config/repo-config.js";
import type { Pool } from "../db/pool.js";
import { agentsOnIssue, readKeyStates, type KeyState, type TaskSummary } from "../sql/tasks.js";

export interface StatusRequest {
  pool: Pool;
  /** `owner/name`, lower case. */
  repo: string;
  issueNumber: number;
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

/** Every agent on the issue: the addressed ones first, then any other with tasks there. */
export const describeIssueStatus: DescribeStatus = async (req) => {
  const others = await agentsOnIssue(req.pool, req.repo, req.issueNumber);
  const agents = [...new Set([...req.agents, ...others])];
  return renderStatus(
    await readKeyStates(req.pool, req.repo, req.issueNumber, agents),
    req.config,
    req.now,
  );
};

export function renderStatus(states: KeyState[], config: RepoConfig, now: Date): string {
  return states
    .map((s) => {
      const mention = config.agents[s.agent]?.mention ?? `@${s.agent}`;
      const lines = [`**\`${mention}\` on this issue**`, ""];
      if (s.running)
        lines.push(
          `- Running: ${describeTask(s.running, now)}${s.running.cancelRequested ? " (stop requested)" : ""}`,
        );
      if (s.queued)
        lines.push(
          `- Queued: ${describeTask(s.queued, now)}${s.queued.forceFresh ? " (fresh session requested)" : ""}`,
        );
      if (!s.running && !s.queued) lines.push("- Idle: nothing running or queued.");
      lines.push(
        s.lastSession
          ? `- Last session: \`${s.lastSession.sessionId}\` (${s.lastSession.state}), from task ${s.lastSession.taskId}`
          : "- No session yet: the next turn starts fresh.",
      );
      return lines.join("\n");
    })
    .join("\n\n");
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
