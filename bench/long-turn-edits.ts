/**
 * The fourth kind of bench/github-requests.ts (#40): a long busy turn, simulated with a fake
 * clock. Ten minutes of a turn calling a tool every 3 s and writing a line every 10 s drive the
 * tracking comment (src/runner/render/tracking-comment.ts) as the run would, against a GitHub
 * thread that only counts: how many times is the comment edited, the answer included? Without
 * the live view the comment is edited at most every 3 s (the old throttle, which the live view
 * off keeps); with the live view linked only at milestones (TETHER_PROGRESS_EDIT_SECONDS).
 */
import type { Pool } from "../src/db/pool.js";
import { pino } from "pino";
import type { GitHubThread } from "../src/runner/ports.js";
import { postgresTurnStore } from "../src/sql/turn-store.js";
import type { Task } from "../src/core/task.js";
import type { trackingComment as TrackingCommentFn } from "../src/runner/render/tracking-comment.js";

export interface LongTurn {
  /** Simulated length of the turn. */
  minutes: number;
  /** A tool call this often. */
  toolEveryMs: number;
  /** A line of the agent's text this often. */
  textEveryMs: number;
}

export const LONG_BUSY_TURN: LongTurn = { minutes: 10, toolEveryMs: 3000, textEveryMs: 10_000 };

export interface LongTurnEdits {
  creates: number;
  /** Edits of the comment, its answer included. */
  edits: number;
}

export async function longTurnEdits(
  make: typeof TrackingCommentFn,
  opts: { intervalMs: number; liveUrl?: string },
  turn: LongTurn = LONG_BUSY_TURN,
): Promise<LongTurnEdits> {
  let clock = Date.UTC(2026, 0, 1);
  const realNow = Date.now;
  // The tracking comment's throttle before #40 read Date.now itself.
  Date.now = () => clock;
  const counts: LongTurnEdits = { creates: 0, edits: 0 };
  const gh = {
    createComment: async () => {
      counts.creates++;
      return 1;
    },
    updateComment: async () => {
      counts.edits++;
    },
    listComments: async () => [],
  } as unknown as GitHubThread;
  // The comment's bookkeeping in Postgres is not what is counted here.
  const pool = { query: async () => ({ rows: [], rowCount: 0 }) } as unknown as Pool;
  const task = { id: 1, agent: "tether", threadNumber: 1, attempts: 1, trackingCommentId: null };
  try {
    const comment = make({
      journal: postgresTurnStore(pool).journal(task as unknown as Task, "bench"),
      gh,
      task: task as unknown as Task,
      log: pino({ level: "silent" }),
      scrub: (s) => s,
      retryInMs: 1000,
    });
    const progress = comment.track({
      decision: { kind: "fresh", reason: "no_prior_session" } as never,
      startedAt: new Date(clock),
      now: () => new Date(clock),
      intervalMs: opts.intervalMs,
      ...(opts.liveUrl ? { liveUrl: opts.liveUrl } : {}),
    } as never);
    const end = clock + turn.minutes * 60_000;
    const start = clock;
    for (let t = start + 1000; t <= end; t += 1000) {
      clock = t;
      if ((t - start) % turn.toolEveryMs === 0) progress.onEvent({ kind: "tool", name: "Bash" });
      if ((t - start) % turn.textEveryMs === 0) progress.onEvent({ kind: "text", text: "working" });
      await comment.settled();
    }
    await comment.answer("done");
    return counts;
  } finally {
    Date.now = realNow;
  }
}
