/**
 * The task's one comment in the thread: the first post creates it ("working on it"), the run's
 * progress edits it (throttled), and the task's last word (its answer, or why there is none)
 * lands in it. Posts run one after another, so the answer may queue behind a progress edit.
 */
import type { Logger } from "../../log.js";
import type { ResumeDecision } from "../../core/resume-decision.js";
import type { Task } from "../../core/task.js";
import type { FinalAnswer, TurnJournal } from "../../core/turn-journal.js";
import type { GitHubThread, ProgressEvent } from "../ports.js";
import { findTaskMarker, renderTracking } from "./thread-comments.js";

/** The run's progress, shown in the task's comment. */
export interface TurnProgress {
  /** What the run did: a tool call, or the agent's latest words. */
  onEvent(ev: ProgressEvent): void;
  /** The turn now runs under `d` (a fresh retry): the next edit says so. */
  decided(d: ResumeDecision): void;
}

type PostResult = { ok: true; commentId: number } | { ok: false; error: string };

export interface TrackingComment {
  /**
   * The task's last word. GitHub refusing it past the request policy's retries does not lose
   * it: the task finishes with the body pending, and the answer poster posts it once GitHub is back.
   */
  answer(body: string): Promise<FinalAnswer>;
  /**
   * Progress in the thread, throttled: posts the "working on it" body for the turn's `decision`
   * now (not awaited: the run need not wait for GitHub to store it) and returns what edits it.
   */
  track(t: {
    decision: ResumeDecision;
    startedAt: Date;
    now: () => Date;
    /** Minimum time between progress edits. */
    intervalMs: number;
    /**
     * The turn's live view, linked from the comment. With it the comment changes only at
     * milestones (progressEditDue): the live page carries the rest.
     */
    liveUrl?: string;
  }): TurnProgress;
  /** Settles when every post so far has. */
  settled(): Promise<unknown>;
}

export function trackingComment(o: {
  /** Where the comment's id and the first tool are written down. */
  journal: TurnJournal;
  gh: GitHubThread;
  task: Task;
  log: Logger;
  scrub: (s: string) => string;
  /** How long the answer poster waits before its first try at an answer GitHub refused. */
  retryInMs: number;
}): TrackingComment {
  const { journal, gh, task, log, scrub, retryInMs } = o;
  // Everything posted goes into one comment per task, and the first post creates it.
  let commentId = task.trackingCommentId;
  const postNow = async (text: string): Promise<PostResult> => {
    try {
      if (commentId === null) commentId = await findOwnComment(gh, task);
      if (commentId === null) {
        commentId = await gh.createComment(task.threadNumber, text);
      } else {
        await gh.updateComment(commentId, text);
      }
      await journal.trackingComment(commentId);
      return { ok: true, commentId };
    } catch (err) {
      const error = scrub(String(err));
      log.warn({ err: error }, "could not write the task's comment");
      return { ok: false, error };
    }
  };
  let posts: Promise<unknown> = Promise.resolve();
  const enqueue = (text: string): Promise<PostResult> => {
    const p = posts.then(() => postNow(text));
    posts = p;
    return p;
  };
  const post = (body: string): Promise<PostResult> => enqueue(scrub(body));

  return {
    answer: async (body) => {
      const text = scrub(body);
      const res = await enqueue(text);
      if (res.ok) return { kind: "posted", commentId: res.commentId };
      log.warn(
        { retryInMs },
        "the answer could not be posted; it is pending for the answer poster",
      );
      return { kind: "pending", body: text, retryInMs };
    },
    track: ({ decision: first, startedAt, now, intervalMs, liveUrl }) => {
      const tracking = { tools: [] as string[], lastText: null as string | null };
      let decision = first;
      const trackingBody = () =>
        renderTracking({
          taskId: task.id,
          agent: task.agent,
          resumed: decision.kind === "resume",
          reason: decision.reason,
          tools: tracking.tools,
          lastText: tracking.lastText,
          startedAt,
          now: now(),
          ...(liveUrl ? { liveUrl } : {}),
        });
      void post(trackingBody()); // not awaited: the run need not wait for GitHub to store it
      let lastEdit = now().getTime();
      return {
        onEvent: (ev) => {
          if (ev.kind === "tool") {
            tracking.tools.push(ev.name);
            void journal.toolRan().catch(() => {});
          } else tracking.lastText = ev.text;
          const due = progressEditDue({
            live: liveUrl !== undefined,
            firstTool: ev.kind === "tool" && tracking.tools.length === 1,
            sinceLastEditMs: now().getTime() - lastEdit,
            intervalMs,
          });
          if (due) {
            lastEdit = now().getTime();
            void post(trackingBody());
          }
        },
        decided: (d) => {
          decision = d;
        },
      };
    },
    settled: () => posts,
  };
}

/**
 * Whether a progress event edits the tracking comment now. Without a live view: whenever
 * `intervalMs` (3 s by default) has passed since the last edit, so the thread shows the run as it
 * goes. With one linked, the comment changes only at milestones (the first tool, then at most
 * every `intervalMs`, TETHER_PROGRESS_EDIT_SECONDS, a minute by default), and the answer: a busy
 * ten-minute turn costs about a dozen edits instead of about two hundred.
 */
export function progressEditDue(p: {
  live: boolean;
  /** This event is the turn's first tool call. */
  firstTool: boolean;
  sinceLastEditMs: number;
  intervalMs: number;
}): boolean {
  if (p.live && p.firstTool) return true;
  return p.sinceLastEditMs >= p.intervalMs;
}

/** A crash between creating the comment and recording its id must not produce a second one. */
async function findOwnComment(gh: GitHubThread, task: Task): Promise<number | null> {
  if (task.attempts <= 1) return null;
  const comments = await gh.listComments(task.threadNumber);
  return comments.find((c) => findTaskMarker(c.body) === task.id)?.id ?? null;
}
