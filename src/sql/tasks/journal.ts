/**
 * The turn's journal (src/core/turn-journal.ts) kept in Postgres: each entry one of the task's
 * leased writes (record.ts, finish.ts, rate-limits.ts requeueUntil) or a write of the key's
 * session row (sessions.ts).
 */
import type { Pool } from "../../db/pool.js";
import type { TaskKey } from "../../core/task.js";
import type { TurnJournal } from "../../core/turn-journal.js";
import { requeueUntil } from "../rate-limits.js";
import { advanceSessionEpoch, markSession, touchSession, upsertSession } from "../sessions.js";
import { finishTask } from "./finish.js";
import {
  markToolRan,
  pinSession,
  recordDecision,
  recordPlanTurn,
  recordPublish,
  recordSessionEntry,
  recordSessionMove,
  setTrackingComment,
} from "./record.js";

/** The journal of task `task.id` under `runnerId`'s lease. */
export function postgresTurnJournal(
  pool: Pool,
  runnerId: string,
  task: TaskKey & { id: number },
): TurnJournal {
  const { id } = task;
  const key: TaskKey = {
    repoId: task.repoId,
    repo: task.repo,
    issueNumber: task.issueNumber,
    agent: task.agent,
  };
  return {
    decided: (d) => recordDecision(pool, id, runnerId, d),
    plannedOnly: () => recordPlanTurn(pool, id, runnerId),
    sessionPinned: async (s) => {
      await pinSession(pool, id, runnerId, s.sessionId);
      await upsertSession(pool, { ...key, ...s });
    },
    sessionMoved: (m) => recordSessionMove(pool, id, runnerId, m),
    sessionEntered: (entry) => recordSessionEntry(pool, id, runnerId, entry),
    sessionUsed: (sessionId, contextTokens, contextWindow) =>
      touchSession(pool, sessionId, contextTokens, contextWindow),
    sessionMarked: (sessionId, state, why) => markSession(pool, sessionId, state, why),
    sessionRewound: (sessionId, epoch) => advanceSessionEpoch(pool, sessionId, epoch),
    trackingComment: (commentId) => setTrackingComment(pool, id, runnerId, commentId),
    toolRan: () => markToolRan(pool, id, runnerId),
    published: (p) => recordPublish(pool, id, runnerId, p),
    requeued: (until) => requeueUntil(pool, id, runnerId, until),
    finished: (f) => finishTask(pool, id, runnerId, f),
  };
}
