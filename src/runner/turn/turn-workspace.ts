/**
 * A turn's workspace: started before the decision (the git update is the slowest step before
 * the spawn, and needs nothing the decision does), awaited once the turn is going to run, or
 * abandoned when it is not.
 */
import { conversationBranch } from "../../publish/publisher.js";
import type { Logger } from "../../log.js";
import type { Mask } from "../../sandbox/sandbox.js";
import type { Task } from "../../core/task.js";
import {
  PROJECT_INSTRUCTIONS_FILE,
  type ProjectInstructions,
} from "../../workspace/project-instructions.js";
import type {
  AgentSettings,
  GitHubThread,
  IssueInfo,
  PreparedWorkspace,
  WorkspacePort,
} from "../ports.js";

export interface TurnWorkspace {
  /** The key's stable directory, and whether it existed before this turn (for the decision). */
  workDir: string;
  workDirExists: boolean;
  /** The issue or pull request, asked of GitHub at once. */
  issue: Promise<IssueInfo>;
  prepared: Promise<PreparedWorkspace>;
  /** The turn ends before the run: stop the workspace update and let it settle. */
  abandon(): Promise<void>;
}

/** What the run needs of the workspace once it is ready. */
export interface ReadyWorkspace {
  issue: IssueInfo;
  prepared: PreparedWorkspace;
  /** A pull request's agent-control files, shown to the agent as its base has them. */
  control: { masks: Mask[]; dispose(): Promise<void> } | null;
  /** The default branch's CLAUDE.md, for an agent with `projectInstructions`. */
  project: ProjectInstructions | null;
}

/**
 * Starts the workspace update. An issue needs nothing from GitHub first; a pull request needs
 * its head branch. Whether the directory existed is read first, for the decision.
 */
export async function startWorkspace(
  workspace: WorkspacePort,
  task: Task,
  gh: GitHubThread,
  token: string | undefined,
  signal: AbortSignal,
): Promise<TurnWorkspace> {
  const workDir = workspace.pathFor(task);
  const workDirExists = await workspace.exists(workDir);
  // An issue's answer changes with every comment (never a free 304): a task queued from a
  // webhook reads the issue as that webhook carried it. A pull request needs GitHub's refs.
  const snapshot = task.isPullRequest ? null : (task.issueSnapshot ?? null);
  const issueP: Promise<IssueInfo> = snapshot
    ? Promise.resolve({
        title: snapshot.title,
        body: snapshot.body,
        author: snapshot.author,
        url: snapshot.url,
        isPullRequest: false,
      })
    : gh.getIssue(task.issueNumber);
  issueP.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
  const preparing = new AbortController();
  const stopPreparing = () => preparing.abort(signal.reason);
  signal.addEventListener("abort", stopPreparing, { once: true });
  const workspaceP = (task.isPullRequest ? issueP : Promise.resolve(null))
    .then((issue) =>
      workspace.prepare({
        repoId: task.repoId,
        repo: task.repo,
        issueNumber: task.issueNumber,
        agent: task.agent,
        cloneUrl: gh.cloneUrl,
        token: token ?? "",
        pullRequest: issue?.pullRequest
          ? {
              number: task.issueNumber,
              headRef: issue.pullRequest.headRef,
              headSha: issue.pullRequest.headSha,
              baseRef: issue.pullRequest.baseRef,
            }
          : undefined,
        ...(task.isPullRequest ? {} : { follow: conversationBranch(task.issueNumber, task.agent) }),
        ...(gh.branchHead ? { serverHead: gh.branchHead.bind(gh) } : {}),
        signal: preparing.signal,
      }),
    )
    .finally(() => signal.removeEventListener("abort", stopPreparing));
  workspaceP.catch(() => {});
  return {
    workDir,
    workDirExists,
    issue: issueP,
    prepared: workspaceP,
    abandon: async () => {
      preparing.abort("not needed");
      await workspaceP.catch(() => {});
    },
  };
}

/**
 * Waits for the workspace, then reads what the run shows the agent besides it: a pull
 * request's agent-control files and the default branch's project instructions. Throws when
 * GitHub or the workspace failed (or the turn was stopped meanwhile).
 */
export async function readyWorkspace(
  workspace: WorkspacePort,
  task: Task,
  ws: TurnWorkspace,
  settings: AgentSettings,
  log: Logger,
  signal: AbortSignal,
): Promise<ReadyWorkspace> {
  let control: ReadyWorkspace["control"] = null;
  const issue = await ws.issue;
  const prepared = await ws.prepared;
  const branch = prepared.defaultBranch;
  const projectP =
    settings.projectInstructions && branch && workspace.projectInstructions
      ? workspace
          .projectInstructions({ repoId: task.repoId, repo: task.repo, branch, signal })
          .catch((err) => {
            // The turn still runs, without them; the log says why.
            log.warn(
              { err: (err as Error).message },
              `could not read ${PROJECT_INSTRUCTIONS_FILE} from the default branch; running without project instructions`,
            );
            return null;
          })
      : null;
  if (issue.pullRequest && workspace.agentControl)
    control = await workspace.agentControl({
      repoId: task.repoId,
      repo: task.repo,
      dir: prepared.dir,
      pullRequest: task.issueNumber,
      baseRef: issue.pullRequest.baseRef,
      signal,
    });
  const project = await projectP;
  if (project)
    log.info(
      { branch: project.branch, bytes: project.bytes, cut: project.cut },
      `project instructions: ${PROJECT_INSTRUCTIONS_FILE} from the default branch`,
    );
  return { issue, prepared, control, project };
}
