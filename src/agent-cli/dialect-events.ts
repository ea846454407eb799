/**
 * The run events a dialect makes alike for every CLI that says little more than its session and
 * whether it answered (Codex, Gemini, opencode); Claude's stream says more (claude/run-evidence.ts).
 */
import type { RunEvent } from "./runtime-adapter.js";

/** The init event of a CLI that names only its session (the model is the one it was given). */
export function initEvent(sessionId: string, model: string | null): RunEvent {
  const unsaid = { cwd: null, cliVersion: null, permissionMode: null, tools: [] };
  return { type: "init", sessionId, model, ...unsaid };
}

type ResultEvent = Extract<RunEvent, { type: "result" }>;

/**
 * The result event of a CLI whose last word says whether it answered: `text` the answer (kept
 * only when `ok`), `error` what it said when not; what it does not say is null.
 */
export function resultEvent(
  end: {
    ok: boolean;
    sessionId: string | undefined;
    text?: string | undefined;
    error?: string | null;
  } & Partial<Pick<ResultEvent, "apiErrorStatus" | "numTurns" | "costUsd">>,
): RunEvent {
  return {
    type: "result",
    subtype: end.ok ? "success" : "error",
    isError: !end.ok,
    text: end.ok ? (end.text ?? null) : null,
    sessionId: end.sessionId ?? null,
    terminalReason: null,
    apiErrorStatus: end.apiErrorStatus ?? null,
    numTurns: end.numTurns ?? null,
    costUsd: end.costUsd ?? null,
    errors: end.error ? [end.error] : [],
  };
}
