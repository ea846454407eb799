/**
 * What a turn tells the agent: the comments it answers, the facts of the turn, and the prompt
 * for its decision (resumed: the new comments; fresh: the whole thread, read while git works).
 */
import type { Logger } from "../../log.js";
import type { PublishTarget } from "../../publish/publisher.js";
import type { ResumeDecision, RewindPlan } from "../../core/resume-decision.js";
import type { Task } from "../../core/task.js";
import type { TurnHistory } from "../../core/turn-history.js";
import type {
  GitHubThread,
  IssueComment,
  IssueInfo,
  PreparedWorkspace,
  ReviewDiscussion,
} from "../ports.js";
import {
  buildColdPrompt,
  buildResumedPrompt,
  type PromptComment,
  type TurnFacts,
} from "../render/prompts.js";
import { reviewContext } from "../render/review-context.js";
import { findTaskMarker } from "../render/thread-comments.js";

export type ThreadRead = {
  comments: IssueComment[];
  review: ReviewDiscussion | "unavailable" | null;
};

/** The comments the turn answers: those coalesced into the task, else its trigger. */
export async function requestsOf(
  history: Pick<TurnHistory, "taskComments">,
  task: Task,
): Promise<PromptComment[]> {
  const rows = await history.taskComments(task.id);
  if (rows.length === 0)
    return [{ author: task.triggerAuthor, url: task.triggerUrl, body: task.triggerBody }];
  return rows.map((r) => ({
    author: r.author,
    url: r.url,
    body: r.body,
    createdAt: r.createdAt.toISOString(),
    ...(r.context.length ? { context: r.context } : {}),
  }));
}

/** Reads the thread a fresh run needs (on a pull request, its review discussion too). */
export function threadReader(gh: GitHubThread, task: Task, log: Logger): () => Promise<ThreadRead> {
  return () =>
    Promise.all([gh.listComments(task.issueNumber), reviewOf(gh, task, log)]).then(
      ([comments, review]) => ({ comments, review }),
    );
}

/** The facts every prompt of the turn ends with, and where its changes go. */
export function turnFacts(
  task: Task,
  requests: PromptComment[],
  target: PublishTarget | null,
  news: { pullNumber: number | null; commits: NonNullable<TurnFacts["changes"]>["news"] },
  prepared: PreparedWorkspace,
  lineComments?: { requestChanges: boolean },
  plan?: TurnFacts["plan"],
): TurnFacts {
  return {
    ...(plan ? { plan } : {}),
    repo: task.repo,
    issueNumber: task.issueNumber,
    isPullRequest: task.isPullRequest,
    agent: task.agent,
    requests,
    ...(task.trigger !== "comment" ? { trigger: task.trigger } : {}),
    ...(task.threadNumber !== task.issueNumber ? { threadNumber: task.threadNumber } : {}),
    ...(lineComments ? { lineComments } : {}),
    ...(target
      ? {
          changes: {
            kind: target.kind,
            branch: target.branch,
            pull: target.kind === "conversation" ? news.pullNumber : target.pull,
            news: news.commits,
            newsTaken: !prepared.headSha || prepared.headSha === prepared.upstream?.sha,
          },
        }
      : {}),
  };
}

/**
 * The prompt for a decision: resumed, the turn's facts; fresh, the thread too. The thread read
 * started early serves the first fresh prompt; a retry reads the thread again.
 */
export function promptFor(p: {
  turn: TurnFacts;
  issue: IssueInfo;
  requests: PromptComment[];
  thread: Promise<ThreadRead> | null;
  readThread: () => Promise<ThreadRead>;
  /** A rewound turn: the comments it sends again, as they read now. */
  resent?: (plan: RewindPlan) => Promise<PromptComment[]>;
  /**
   * Who made the ignored edits of these comments (`comment:<id>` → editor): an edit by someone
   * who may not ask, which GitHub shows and the thread marks as theirs (#38).
   */
  ignoredEditors?: (sources: string[]) => Promise<Map<string, string>>;
}): (d: ResumeDecision) => Promise<string> {
  const { turn, issue, requests, readThread } = p;
  let threadP = p.thread;
  const coldPrompt = async () => {
    const all = await (threadP ?? readThread());
    threadP = null; // a retry reads the thread again
    // What the requests brought is shown with them, not again as the thread's context.
    const asked = new Set(requests.flatMap((r) => [r.url, ...(r.context ?? []).map((c) => c.url)]));
    const comments = all.comments.filter((c) => !asked.has(c.url) && !isInProgress(c));
    const editors = (await p.ignoredEditors?.(comments.map((c) => `comment:${c.id}`))) ?? new Map();
    return buildColdPrompt(
      {
        title: issue.title,
        body: issue.body,
        author: issue.author,
        url: issue.url,
        comments: comments.map((c) => {
          const editedBy = editors.get(`comment:${c.id}`);
          return { ...toPromptComment(c), ...(editedBy ? { editedBy } : {}) };
        }),
        ...(all.review === "unavailable"
          ? { review: { items: [], unread: false, unavailable: true } }
          : all.review
            ? { review: reviewContext(all.review, asked, isInProgress) }
            : {}),
        ...(issue.pullRequest
          ? {
              pullRequest: {
                headRef: issue.pullRequest.headRef,
                baseRef: issue.pullRequest.baseRef,
              },
            }
          : {}),
      },
      turn,
    );
  };
  return async (d) => {
    if (d.kind === "fresh") return coldPrompt();
    if (!d.rewind) return buildResumedPrompt(turn);
    return buildResumedPrompt(turn, {
      comments: p.resent ? await p.resent(d.rewind) : [],
      deleted: d.rewind.changed.some((c) => c.deleted),
      edited: d.rewind.changed.some((c) => !c.deleted),
    });
  };
}

/**
 * A pull request's review discussion, or null (an issue, or a thread that cannot list it). It
 * is context on top of the conversation, so GitHub failing to give it does not fail the turn:
 * the prompt says it could not be read.
 */
async function reviewOf(
  gh: GitHubThread,
  task: Task,
  log: Logger,
): Promise<ReviewDiscussion | "unavailable" | null> {
  if (!task.isPullRequest || !gh.listReviewDiscussion) return null;
  try {
    return await gh.listReviewDiscussion(task.issueNumber);
  } catch (err) {
    log.warn(
      { err: (err as Error).message },
      "could not read the pull request's review discussion",
    );
    return "unavailable";
  }
}

/** Tether's own "working on it" comments are noise in a prompt; its finished answers are context. */
function isInProgress(c: IssueComment): boolean {
  return findTaskMarker(c.body) !== null && c.body.startsWith("⏳");
}

function toPromptComment(c: IssueComment): PromptComment {
  return { author: c.author, url: c.url, body: c.body, createdAt: c.createdAt };
}
