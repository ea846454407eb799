/**
 * The turns' store (src/core/turn-journal.ts TurnStore) kept in Postgres. Each journal entry is
 * one of the task's leased writes (tasks/record.ts, tasks/finish.ts, rate-limits.ts
 * requeueUntil), a write of the key's session row (sessions.ts) or a row of its live view
 * (turn-events.ts); each history read (core/turn-history.ts) is one query of the module that
 * owns its table.
 */
import type { Pool } from "../db/pool.js";
import type { TaskKey } from "../core/task.js";
import type { TurnJournal, TurnStore } from "../core/turn-journal.js";
import type { TurnHistory } from "../core/turn-history.js";
import { getConversation } from "./conversations.js";
import { readEpoch, resentComments, rewindFacts } from "./history.js";
import { ignoredEditors } from "./ignored-edits.js";
import { requeueUntil } from "./rate-limits.js";
import {
  advanceSessionEpoch,
  knownWindow,
  markSession,
  priorSession,
  sessionById,
  touchSession,
  upsertSession,
} from "./sessions.js";
import { conversationSpend, spentSince } from "./spend.js";
import { taskComments } from "./tasks/claim.js";
import { finishTask } from "./tasks/finish.js";
import { lastTurnPlan } from "./tasks/read.js";
import {
  markToolRan,
  pinSession,
  recordDecision,
  recordPlanTurn,
  recordPublish,
  recordSessionEntry,
  recordSessionMove,
  setTrackingComment,
} from "./tasks/record.js";
import { transcriptHead } from "./transcripts.js";
import { appendTurnEvent, noteDroppedEvents, trimTurnEvents } from "./turn-events.js";

/** The turns' store in `pool`: what `/status` reads is its history alone (postgresTurnHistory). */
export function postgresTurnStore(pool: Pool): TurnStore {
  return {
    ...postgresTurnHistory(pool),
    journal: (task, runnerId) => postgresTurnJournal(pool, runnerId, task),
  };
}

export function postgresTurnHistory(pool: Pool): TurnHistory {
  return {
    taskComments: (taskId) => taskComments(pool, taskId),
    priorSession: (key) => priorSession(pool, key),
    sessionById: (sessionId) => sessionById(pool, sessionId),
    epoch: (key) => readEpoch(pool, key),
    rewindFacts: (key, sessionId, from, to) => rewindFacts(pool, key, sessionId, from, to),
    knownWindow: (model) => knownWindow(pool, model),
    resentComments: (key, sources) => resentComments(pool, key, sources),
    ignoredEditors: (repoId, sources) => ignoredEditors(pool, repoId, sources),
    lastTurn: (key, beforeTaskId) => lastTurnPlan(pool, key, beforeTaskId),
    conversationSpend: (key, opts) => conversationSpend(pool, key, opts),
    spentSince: (scope, from) => spentSince(pool, scope, from),
    transcriptHead: (key, sessionId) => transcriptHead(pool, key, sessionId),
    conversation: (key) => getConversation(pool, key),
  };
}

/** The journal of task `task.id` under `runnerId`'s lease. */
function postgresTurnJournal(
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
    eventStreamed: async (kind, body) => {
      await appendTurnEvent(pool, id, kind, body);
    },
    eventsTrimmed: (bound) => trimTurnEvents(pool, id, bound),
    eventsDropped: (dropped) => noteDroppedEvents(pool, id, dropped),
  };
}
