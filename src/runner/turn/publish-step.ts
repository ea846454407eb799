/**
 * A turn's changes: before the run, where they go and what moved on that branch since the
 * last turn (for the prompt); after a run that succeeded, their publishing and its record.
 */
import { DEFAULT_CONFIG } from "../../config/repo-config.js";
import type { Logger } from "../../log.js";
import { publishTarget, type Publisher, type PublishTarget } from "../../publish/publisher.js";
import type { PublishReport } from "../../publish/report.js";
import type { Task } from "../../core/task.js";
import type { PublishRecord, TurnJournal } from "../../core/turn-journal.js";
import type {
  AgentRunResult,
  AgentSettings,
  GitHubThread,
  IssueInfo,
  PreparedWorkspace,
  RepoSettings,
} from "../ports.js";
import type { PromptComment } from "../render/prompts.js";
import type { RunTaskDeps } from "./turn.js";
import type { TaskKey } from "../../core/task.js";

export interface ChangesPlan {
  mode: NonNullable<AgentSettings["changes"]>;
  /** Absent: the changes stay in the workspace. */
  publisher: Publisher | undefined;
  target: PublishTarget | null;
  news: Awaited<ReturnType<Publisher["news"]>>;
}

/** Where the agent's changes go after the turn, and what moved on that branch since the last. */
export async function planChanges(
  deps: Pick<RunTaskDeps, "publish">,
  gh: GitHubThread,
  settings: AgentSettings,
  key: TaskKey,
  issue: IssueInfo,
  prepared: PreparedWorkspace,
  log: Logger,
): Promise<ChangesPlan> {
  const changesMode = settings.changes ?? "pull_request";
  const publisher =
    deps.publish && gh.writer && changesMode !== "off" && settings.permissionMode !== "plan"
      ? deps.publish
      : undefined;
  const target = publisher ? publishTarget(key, issue) : null;
  const news =
    publisher && target?.kind === "conversation"
      ? await publisher.news(key, prepared.upstream).catch((err: Error) => {
          log.warn({ err: err.message }, "could not read what moved on the conversation branch");
          return { pullNumber: null, commits: [] };
        })
      : { pullNumber: null, commits: [] };
  return { mode: changesMode, publisher, target, news };
}

/**
 * The agent's changes leave the workspace only after a turn that succeeded: a failed or
 * stopped one may have left them half done, and the next turn publishes them with its own.
 * Null when publishing did not run.
 */
export async function publishChanges(
  journal: TurnJournal,
  plan: ChangesPlan,
  t: {
    task: Task;
    key: TaskKey;
    gh: GitHubThread;
    token: string | undefined;
    issue: IssueInfo;
    prepared: PreparedWorkspace;
    config: RepoSettings;
    requests: PromptComment[];
    result: AgentRunResult;
    scrub: (s: string) => string;
    secrets: Set<string | undefined>;
    log: Logger;
    signal: AbortSignal;
  },
): Promise<PublishReport | null> {
  const { publisher, mode: changesMode } = plan;
  const { task, key, gh, token, issue, prepared, config, requests, result, scrub, log } = t;
  const { secrets, signal } = t;
  let published: PublishReport | null = null;
  if (
    publisher &&
    gh.writer &&
    result.outcome === "success" &&
    !signal.aborted &&
    prepared.upstream
  ) {
    published = await publisher.publish({
      key,
      taskId: task.id,
      cloneUrl: gh.cloneUrl,
      token: token ?? "",
      writer: gh.writer,
      issue,
      upstreamRef: prepared.upstream.ref,
      upstreamSha: prepared.upstream.sha,
      defaultBranch: prepared.defaultBranch ?? "",
      mode: changesMode === "branch" ? "branch" : "pull_request",
      config: config.publish ?? {
        ...DEFAULT_CONFIG.publish,
        signedCommits: DEFAULT_CONFIG.changes.signedCommits,
      },
      requesters: requests.map((r) => ({ login: r.author, url: r.url })),
      summary: scrub(result.text ?? ""),
      secrets: secrets,
      signal,
    });
    log.info(
      {
        publish: published.result,
        ...("reason" in published ? { reason: published.reason } : {}),
        ...(published.result === "published"
          ? { sha: published.sha, branch: published.branch }
          : {}),
      },
      "changes published",
    );
    await journal.published(toRecord(published, scrub));
  }
  return published;
}

function toRecord(r: PublishReport, scrub: (s: string) => string): PublishRecord {
  switch (r.result) {
    case "published":
      return {
        result: "published",
        reason: null,
        detail: r.pull ? r.pull.url : r.branch,
        sha: r.sha,
        commits: r.commits,
        pullOpened: r.pull?.opened ? r.pull.number : null,
      };
    case "refused":
      return { ...none, result: "refused", reason: r.reason, detail: scrub(r.messages.join(" ")) };
    case "failed":
      return { ...none, result: "failed", reason: r.reason, detail: scrub(r.message) };
    case "patch":
      return { ...none, result: "patch" };
    case "unchanged":
      return { ...none, result: "unchanged" };
  }
}

const none = { reason: null, detail: null, sha: null, commits: null, pullOpened: null };
