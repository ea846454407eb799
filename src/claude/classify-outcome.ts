import type { RunEvidence } from "./run-evidence.js";
import { resultErrors } from "./run-evidence.js";
import { classifyExit, resumedElsewhere } from "../agent-cli/outcome.js";
import type { Classification, ExitFacts, StopReason } from "../agent-cli/outcome.js";
import type { StreamMessage } from "./stream-parser.js";

export interface ClassifyInput {
  /** The session the run was asked to resume, if any. */
  resumeSessionId?: string;
  evidence: RunEvidence;
  exit: ExitFacts;
}

/** Claude's words for a conversation over the model's context window (a 400's message). */
const PROMPT_TOO_LONG = /prompt is too long|prompt_too_long/i;

const NO_CONVERSATION = /No conversation found with session ID/i;
/** The CLI refusing its command line: not a verdict on the session. */
const ARGUMENT_ERROR =
  /^error: (unknown option|option|missing required|too many arguments)|cannot be used with root\/sudo privileges/im;

/**
 * Should the run be stopped now, before the CLI ends by itself? Checked after every line.
 * - A 401/403 retry: the CLI would retry ten times over minutes with the same bad key.
 * - A resumed run whose init names another session: the CLI started a new conversation, and
 *   letting it work (and run tools) would spoil the fresh retry the runner makes instead.
 */
export function earlyStop(
  message: StreamMessage,
  evidence: RunEvidence,
  resumeSessionId: string | undefined,
): { reason: StopReason; detail: string } | undefined {
  if (message.kind === "api_retry" && evidence.authRetry) {
    return { reason: "auth_failed", detail: authDetail(evidence.authRetry.status) };
  }
  return message.kind === "init"
    ? resumedElsewhere(resumeSessionId, evidence.init?.sessionId)
    : undefined;
}

/**
 * The outcome of a run, from the evidence in its stream, its stderr and its exit, by the ladder
 * every CLI's is judged by (classifyExit); the result line is the CLI's last word. Pure.
 */
export function classifyOutcome({
  resumeSessionId,
  evidence,
  exit,
}: ClassifyInput): Classification {
  const result = evidence.result;
  return classifyExit(exit, {
    resumeSessionId,
    started: evidence.init !== undefined,
    verdict: result && {
      answered: !result.is_error && result.subtype === "success",
      classify: () => fromResult(evidence, resumeSessionId, exit.stderrTail),
    },
    noResume: { pattern: NO_CONVERSATION, detail: () => noConversation(resumeSessionId) },
    argumentError: ARGUMENT_ERROR,
    lastly: () =>
      evidence.authRetry && { kind: "auth_failed", detail: authDetail(evidence.authRetry.status) },
    resuming: "starting resumed session",
    without: "a result line",
  });
}

function fromResult(
  evidence: RunEvidence,
  resumeSessionId: string | undefined,
  stderr: string,
): Classification {
  const result = evidence.result!;
  const errors = resultErrors(result);
  const said = [result.result ?? "", ...errors].filter(Boolean).join("; ");

  if (resumeSessionId !== undefined) {
    if (errors.some((e) => NO_CONVERSATION.test(e)) || NO_CONVERSATION.test(stderr)) {
      return { kind: "resume_rejected", detail: noConversation(resumeSessionId) };
    }
    if (!evidence.init) {
      return {
        kind: "resume_rejected",
        detail: `the CLI did not start resumed session ${resumeSessionId}: ${said || result.subtype}`,
      };
    }
    if (evidence.init.sessionId !== resumeSessionId) {
      return {
        kind: "resume_rejected",
        detail: `asked to resume session ${resumeSessionId}, but the CLI ran session ${evidence.init.sessionId}`,
      };
    }
  }
  if (result.terminal_reason === "prompt_too_long") {
    return {
      kind: "poisoned",
      detail: `the conversation no longer fits the model's context (prompt_too_long)${said ? `: ${said}` : ""}`,
      contextOverflow: true,
    };
  }
  const status = result.api_error_status ?? null;
  if (
    result.is_error &&
    (status === 401 || status === 403 || evidence.assistantError === "authentication_failed")
  ) {
    return { kind: "auth_failed", detail: authDetail(status ?? 401) };
  }
  // The API answers 400 only with invalid_request_error. The CLI saved the turn to the session
  // before the call, so resuming would send the same rejected history again.
  if (result.is_error && (status === 400 || evidence.assistantError === "invalid_request")) {
    return {
      kind: "poisoned",
      detail: `the API rejected the conversation (400 invalid_request_error)${said ? `: ${said}` : ""}`,
      ...(PROMPT_TOO_LONG.test(said) ? { contextOverflow: true } : {}),
    };
  }
  if (!result.is_error && result.subtype === "success") {
    const turns = result.num_turns ?? 0;
    return { kind: "success", detail: `answered in ${turns} turn${turns === 1 ? "" : "s"}` };
  }
  if (result.subtype === "error_max_turns") {
    return {
      kind: "failed",
      detail: `stopped at the agent's turn limit (${result.num_turns ?? "?"} turns); raise maxTurns or ask for less`,
    };
  }
  // Seen with 2.1.197 and 2.1.332: checked after each model call; the run's cost has reached
  // the limit (it may be over it by that call). A tool that call asked for was not run by
  // 2.1.197; 2.1.332 runs it and reports no result (toolRan counts its tool_use all the same).
  // The session is saved and resumes normally, so this is not a poisoned session.
  if (result.subtype === "error_max_budget_usd") {
    const cost = result.total_cost_usd;
    return {
      kind: "turn_limit",
      detail: `stopped at the agent's per-turn spend limit${typeof cost === "number" ? ` after spending $${cost.toFixed(4)}` : ""}${said ? `: ${said}` : ""}`,
    };
  }
  return {
    kind: "failed",
    detail: `the CLI reported an error (${result.subtype}${status ? `, API status ${status}` : ""})${said ? `: ${said}` : ""}`,
  };
}

function authDetail(status: number): string {
  return `the Anthropic API refused the credentials (HTTP ${status}); check ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN in the runner's environment`;
}

function noConversation(id: string | undefined): string {
  return `the CLI has no conversation ${id} for this working directory and HOME (moved, deleted, or made elsewhere)`;
}
