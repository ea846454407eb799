import type { RunEvidence } from "./run-evidence.js";
import { resultErrors } from "./run-evidence.js";
import {
  exitWords,
  firstLine,
  stderrWords,
  type Classification,
  type ExitFacts,
  type StopReason,
} from "../agent-cli/outcome.js";
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
  if (
    message.kind === "init" &&
    resumeSessionId !== undefined &&
    evidence.init &&
    evidence.init.sessionId !== resumeSessionId
  ) {
    return {
      reason: "resume_rejected",
      detail: `asked to resume session ${resumeSessionId}, but the CLI started session ${evidence.init.sessionId}`,
    };
  }
  return undefined;
}

/**
 * The outcome of a run, from the evidence in its stream, its stderr and its exit. Pure.
 * Order matters: a stop the adapter made for a reason outranks what followed from the kill;
 * a result line that arrived is the CLI's own verdict and outranks a later cancel; resume
 * failures are recognised before the rest because the runner acts on them (retire the
 * session, retry fresh).
 */
export function classifyOutcome({
  resumeSessionId,
  evidence,
  exit,
}: ClassifyInput): Classification {
  const resumed = resumeSessionId !== undefined;
  const stderr = exit.stderrTail;
  const result = evidence.result;

  if (exit.spawnError) return { kind: "failed", detail: exit.spawnError };
  if (exit.stop?.reason === "no_start") return { kind: "failed", detail: exit.stop.detail };
  if (exit.stop?.reason === "auth_failed") return { kind: "auth_failed", detail: exit.stop.detail };
  if (exit.stop?.reason === "resume_rejected") {
    return { kind: "resume_rejected", detail: exit.stop.detail };
  }
  // A finished answer stands even if a stop raced it; an error result printed while the CLI was
  // being stopped is the stop's doing.
  const answered = result !== undefined && !result.is_error && result.subtype === "success";
  if (result && (!exit.stop || !exit.resultAfterStop || answered)) {
    return fromResult(evidence, resumeSessionId, stderr);
  }
  if (exit.stop) return { kind: exit.stop.reason, detail: exit.stop.detail };

  // The CLI ended by itself without a result line.
  const how = exitWords(exit);
  if (resumed && NO_CONVERSATION.test(stderr)) {
    return { kind: "resume_rejected", detail: noConversation(resumeSessionId) };
  }
  if (ARGUMENT_ERROR.test(stderr)) {
    return {
      kind: "failed",
      detail: `the CLI refused its arguments (${how}): ${firstLine(stderr)}`,
    };
  }
  if (resumed && !evidence.init) {
    return {
      kind: "resume_rejected",
      detail: `the CLI ${how} before starting resumed session ${resumeSessionId}${stderrWords(stderr)}`,
    };
  }
  if (evidence.authRetry) {
    return { kind: "auth_failed", detail: authDetail(evidence.authRetry.status) };
  }
  return {
    kind: "failed",
    detail: `the CLI ${how} without a result line${stderrWords(stderr)}`,
  };
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
