/**
 * What a Codex run showed, and what it comes to: the events the runner sees, when to stop the
 * CLI early, the outcome in the same set as Claude's, and the turn's usage and estimated cost.
 * Every rule here rests on a case in docs/codex-cli-facts.md ("Failures seen").
 */
import { classifyExit, resumedElsewhere } from "../agent-cli/outcome.js";
import { initEvent, resultEvent } from "../agent-cli/dialect-events.js";
import type { Classification, ClassifyInput, StopReason } from "../agent-cli/outcome.js";
import type { RunEvent, RunUsage, TokenUsage } from "../agent-cli/runtime-adapter.js";
import type { CodexMessage, CodexUsage } from "./codex-stream.js";
import { estimateCostUsd } from "../providers/openai/pricing.js";
import type { RolloutFacts } from "./rollout.js";

export interface CodexEvidence {
  /** From the first `thread.started` only. */
  threadId: string | undefined;
  /** The model the run was started with (Codex does not print it). */
  model: string | null;
  turnStarted: boolean;
  /** `turn.completed`'s usage: the thread's running totals (null when it had none). */
  completed: { usage: CodexUsage | null } | undefined;
  /** `turn.failed`'s message. */
  failed: string | undefined;
  /** Top-level `error` events: retries (`Reconnecting…`) and the fatal one. */
  errors: string[];
  /** The first retry on a 401/403: credentials the API refuses. */
  authRetry: string | undefined;
  /** Tool items seen (by item id), and the last agent message. */
  tools: Set<string>;
  lastText: string | undefined;
  /** The thread's rollout before and after the run (a resumed thread has a before). */
  before: RolloutFacts | null;
  after: RolloutFacts | null;
}

export function newCodexEvidence(): CodexEvidence {
  return {
    threadId: undefined,
    model: null,
    turnStarted: false,
    completed: undefined,
    failed: undefined,
    errors: [],
    authRetry: undefined,
    tools: new Set(),
    lastText: undefined,
    before: null,
    after: null,
  };
}

const TOOL_ITEMS: Record<string, string> = {
  command_execution: "shell",
  file_change: "apply_patch",
  mcp_tool_call: "mcp",
  web_search: "web_search",
  collab_tool_call: "collab",
};

const AUTH = /\b(401 Unauthorized|403 Forbidden)\b|Missing environment variable/;
/** Codex's fixed sentence for a context overflow (HTTP 400 or a streamed response.failed). */
const CONTEXT_OVERFLOW = /ran out of room in the model's context window|context_length_exceeded/i;
const RATE_LIMIT = /429 Too Many Requests|Quota exceeded|rate limit/i;
const NO_ROLLOUT = /no rollout found for thread id/i;
const ARGUMENT_ERROR = /^error: (unexpected argument|invalid value|the argument|unrecognized)/im;

/** Adds one message to the evidence; returns the events it makes. */
export function observeCodex(ev: CodexEvidence, m: CodexMessage): RunEvent[] {
  switch (m.kind) {
    case "thread_started": {
      if (ev.threadId) return [];
      ev.threadId = m.threadId;
      return [initEvent(m.threadId, ev.model)];
    }
    case "turn_started":
      ev.turnStarted = true;
      return [];
    case "error": {
      ev.errors.push(m.message);
      const retry = /^Reconnecting\.\.\. (\d+)\/(\d+)/.exec(m.message);
      if (retry && AUTH.test(m.message)) ev.authRetry ??= m.message;
      if (!retry) return [];
      const status = /unexpected status (\d{3})|last status: (\d{3})/.exec(m.message);
      return [
        {
          type: "api_retry",
          attempt: Number(retry[1]),
          maxRetries: Number(retry[2]),
          errorStatus: status ? Number(status[1] ?? status[2]) : null,
          error: m.message,
          retryDelayMs: null,
        },
      ];
    }
    case "item": {
      const { item } = m;
      const tool = TOOL_ITEMS[item.type];
      const id = item.id ?? `${item.type}-${ev.tools.size}`;
      if (tool) {
        const events: RunEvent[] = [];
        if (!ev.tools.has(id)) {
          ev.tools.add(id);
          // An MCP call is named as Claude's are, `mcp__<server>__<tool>`, so it counts per server.
          const name =
            tool === "mcp" && typeof item.server === "string" && typeof item.tool === "string"
              ? `mcp__${item.server}__${item.tool}`
              : tool;
          events.push({ type: "tool_use", id, name, input: item, parentToolUseId: null });
        }
        if (m.phase === "completed") {
          const failed =
            item.status === "failed" ||
            (typeof item.exit_code === "number" && item.exit_code !== 0);
          const output = item.aggregated_output;
          events.push({
            type: "tool_result",
            toolUseId: id,
            isError: failed,
            ...(typeof output === "string" ? { output } : {}),
          });
        }
        return events;
      }
      if (item.type === "agent_message" && m.phase === "completed") {
        const text = typeof item.text === "string" ? item.text : "";
        ev.lastText = text;
        return [{ type: "text", text, parentToolUseId: null }];
      }
      return [];
    }
    case "turn_completed":
      ev.completed = { usage: m.usage };
      return [resultEvent({ ok: true, sessionId: ev.threadId, text: ev.lastText })];
    case "turn_failed":
      ev.failed = m.message;
      return [resultEvent({ ok: false, sessionId: ev.threadId, error: m.message })];
    case "unknown":
    case "unreadable":
      return [];
  }
}

/**
 * Stop the CLI now? On the first 401/403 retry (it would retry five times with the same bad
 * key), and when a resume reports another thread than the one asked for (a non-UUID id makes
 * Codex start a fresh thread silently; letting it work would spoil the runner's fresh retry).
 */
export function codexEarlyStop(
  m: CodexMessage,
  ev: CodexEvidence,
  resumeSessionId: string | undefined,
): { reason: StopReason; detail: string } | undefined {
  if (m.kind === "error" && ev.authRetry === m.message) {
    return { reason: "auth_failed", detail: authDetail(m.message) };
  }
  if (m.kind === "thread_started") return resumedElsewhere(resumeSessionId, ev.threadId, "thread");
  return undefined;
}

/** The outcome, by the ladder every CLI's is judged by (classifyExit). */
export function classifyCodex({
  resumeSessionId,
  state: ev,
  exit,
}: ClassifyInput<CodexEvidence>): Classification {
  const answered = ev.completed !== undefined;
  return classifyExit(exit, {
    resumeSessionId,
    started: ev.threadId !== undefined,
    verdict:
      answered || ev.failed !== undefined
        ? {
            answered,
            classify: () => (answered ? { kind: "success", detail: "answered" } : fromFailure(ev)),
          }
        : undefined,
    noResume: {
      pattern: NO_ROLLOUT,
      detail: () =>
        `the CLI has no rollout for thread ${resumeSessionId} in its CODEX_HOME (not restored, or made elsewhere)`,
    },
    argumentError: ARGUMENT_ERROR,
    lastly: () =>
      ev.authRetry ? { kind: "auth_failed", detail: authDetail(ev.authRetry) } : undefined,
    resuming: "resuming thread",
  });
}

function fromFailure(ev: CodexEvidence): Classification {
  const said = ev.failed || ev.errors.at(-1) || "";
  if (CONTEXT_OVERFLOW.test(said)) {
    return {
      kind: "poisoned",
      detail: `the thread no longer fits the model's context window: ${said}`,
      contextOverflow: true,
    };
  }
  if (AUTH.test(said)) return { kind: "auth_failed", detail: authDetail(said) };
  if (RATE_LIMIT.test(said)) {
    return {
      kind: "failed",
      detail: `the OpenAI API is rate limiting this key or its quota is spent; try again later: ${said}`,
    };
  }
  return { kind: "failed", detail: `the CLI reported an error: ${said || "(no message)"}` };
}

function authDetail(said: string): string {
  return `the OpenAI API refused the credentials (${/\d{3} \w+/.exec(said)?.[0] ?? said.slice(0, 120)}); check OPENAI_API_KEY in the runner's environment`;
}

const ZERO: CodexUsage = {
  input_tokens: 0,
  cached_input_tokens: 0,
  cache_write_input_tokens: 0,
  output_tokens: 0,
  reasoning_output_tokens: 0,
};

/**
 * The turn's own tokens: Codex reports the thread's running totals (every run, every request),
 * so a turn's share is what the total grew by since the previous turn left it. The total after
 * the run comes from `turn.completed`, else from the rollout (a failed turn's requests still
 * count); the total before from the restored rollout.
 */
export function codexTurnTokens(ev: CodexEvidence): TokenUsage {
  const after = ev.completed?.usage ?? ev.after?.totals ?? null;
  if (!after)
    return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 };
  const before = ev.before?.totals ?? ZERO;
  const d = (k: keyof CodexUsage) => Math.max(0, after[k] - before[k]);
  const cached = d("cached_input_tokens");
  const written = d("cache_write_input_tokens");
  return {
    // OpenAI's input_tokens includes the cached ones; Tether's inputTokens are the uncached.
    inputTokens: Math.max(0, d("input_tokens") - cached - written),
    outputTokens: d("output_tokens"),
    cacheReadTokens: cached,
    cacheCreationTokens: written,
  };
}

export function codexUsage(ev: CodexEvidence, wallMs: number): RunUsage {
  const tokens = codexTurnTokens(ev);
  const requests = Math.max(0, (ev.after?.requests ?? 0) - (ev.before?.requests ?? 0));
  return {
    ...tokens,
    costUsd: estimateCostUsd(ev.model, tokens),
    numTurns: requests || (ev.completed ? 1 : 0),
    durationMs: wallMs,
    model: ev.model,
    contextTokens: ev.after?.lastInputTokens ?? null,
    contextWindow: ev.after?.contextWindow ?? null,
  };
}

export function codexToolRan(ev: CodexEvidence): boolean {
  // A command the sandbox refused sometimes printed no item (facts, "Tools"); the rollout
  // holds every call.
  return ev.tools.size > 0 || (ev.after?.toolCalls ?? 0) > (ev.before?.toolCalls ?? 0);
}
