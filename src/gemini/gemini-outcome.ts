/**
 * What a Gemini CLI run showed, and what it comes to: the events the runner sees, when to stop
 * the CLI early, the outcome in the same set as Claude's and Codex's, and the turn's usage and
 * estimated cost. Every rule here rests on a case in docs/gemini-cli-facts.md ("Failures seen").
 */
import { classifyExit, firstLine, resumedElsewhere } from "../agent-cli/outcome.js";
import { initEvent, resultEvent } from "../agent-cli/dialect-events.js";
import type { Classification, ClassifyInput, StopReason } from "../agent-cli/outcome.js";
import type { RunEvent, RunUsage, TokenUsage } from "../agent-cli/runtime-adapter.js";
import type { GeminiMessage, GeminiResultStats, GeminiStats } from "./gemini-stream.js";
import { estimateCostUsd, GEMINI_CONTEXT_WINDOW } from "../providers/google/pricing.js";
import type { SessionFacts } from "./session-files.js";

export interface GeminiEvidence {
  /** From the first `init` line only. */
  sessionId: string | undefined;
  /** The model the run asked for, then the one the init line named. */
  model: string | null;
  /** The `result` line. */
  result:
    | {
        ok: boolean;
        error: string | null;
        errorType: string | null;
        stats: GeminiResultStats | null;
      }
    | undefined;
  /** `error` lines (warnings and errors the CLI went on after). */
  errors: string[];
  tools: Set<string>;
  /** The assistant's text since the last tool call: the turn's answer. */
  text: string;
  /** The session file after the run. */
  after: SessionFacts | null;
  before: SessionFacts | null;
}

export function newGeminiEvidence(): GeminiEvidence {
  return {
    sessionId: undefined,
    model: null,
    result: undefined,
    errors: [],
    tools: new Set(),
    text: "",
    after: null,
    before: null,
  };
}

/** The API's words for a prompt over the model's input limit (HTTP 400 INVALID_ARGUMENT). */
const CONTEXT_OVERFLOW =
  /exceeds the maximum number of tokens allowed|input token count.{0,40}exceeds|context (window|length) exceeded/i;
const AUTH =
  /API key not valid|API_KEY_INVALID|"code":\s*40[13]\b|\b40[13] (Unauthorized|Forbidden)\b|PERMISSION_DENIED|UNAUTHENTICATED/;
const RATE_LIMIT = /RESOURCE_EXHAUSTED|"code":\s*429|\b429\b|quota/i;
/** `Error resuming session: Invalid session identifier "…"` or `No previous sessions found`. */
const RESUME_ERROR = /Error resuming session/i;
const ARGUMENT_ERROR =
  /^(Unknown argument|Not enough arguments|Invalid values?:|Missing required)/im;

export function observeGemini(ev: GeminiEvidence, m: GeminiMessage): RunEvent[] {
  switch (m.kind) {
    case "init": {
      if (ev.sessionId) return [];
      ev.sessionId = m.sessionId;
      ev.model = m.model ?? ev.model;
      return [initEvent(m.sessionId, ev.model)];
    }
    case "text": {
      if (m.role !== "assistant") return [];
      ev.text = m.delta ? ev.text + m.text : m.text;
      return m.text ? [{ type: "text", text: m.text, parentToolUseId: null }] : [];
    }
    case "tool_use":
      ev.tools.add(m.id);
      ev.text = "";
      return [{ type: "tool_use", id: m.id, name: m.name, input: m.input, parentToolUseId: null }];
    case "tool_result":
      return [{ type: "tool_result", toolUseId: m.id, isError: m.isError }];
    case "error":
      ev.errors.push(m.message);
      return [];
    case "result": {
      ev.result = { ok: m.ok, error: m.error, errorType: m.errorType, stats: m.stats };
      const { ok, error } = m;
      const text = ev.text || undefined;
      return [
        resultEvent({ ok, sessionId: ev.sessionId, text, error, apiErrorStatus: apiStatus(error) }),
      ];
    }
    case "unknown":
    case "unreadable":
      return [];
  }
}

function apiStatus(error: string | null): number | null {
  const code = /"code":\s*(\d{3})/.exec(error ?? "");
  return code ? Number(code[1]) : null;
}

/**
 * Stop the CLI now? When a resume reports another session than the one asked for (letting it
 * work would spoil the runner's fresh retry).
 */
export function geminiEarlyStop(
  m: GeminiMessage,
  ev: GeminiEvidence,
  resumeSessionId: string | undefined,
): { reason: StopReason; detail: string } | undefined {
  return m.kind === "init" ? resumedElsewhere(resumeSessionId, ev.sessionId) : undefined;
}

/** The outcome, by the ladder every CLI's is judged by (classifyExit). */
export function classifyGemini({
  resumeSessionId,
  state: ev,
  exit,
}: ClassifyInput<GeminiEvidence>): Classification {
  const { result } = ev;
  return classifyExit(exit, {
    resumeSessionId,
    started: ev.sessionId !== undefined,
    verdict: result && {
      answered: result.ok,
      classify: () => (result.ok ? { kind: "success", detail: "answered" } : fromFailure(ev)),
    },
    noResume: {
      pattern: RESUME_ERROR,
      detail: (stderr) =>
        `the CLI has no file for session ${resumeSessionId} in its HOME (not restored, or made elsewhere): ${firstLine(stderr.slice(stderr.search(RESUME_ERROR)))}`,
    },
    argumentError: ARGUMENT_ERROR,
    lastly: ({ stderr }) =>
      AUTH.test(stderr) ? { kind: "auth_failed", detail: authDetail(stderr) } : undefined,
  });
}

function fromFailure(ev: GeminiEvidence): Classification {
  const said = ev.result?.error || ev.errors.at(-1) || "";
  if (CONTEXT_OVERFLOW.test(said)) {
    return {
      kind: "poisoned",
      detail: `the session no longer fits the model's context window: ${said.slice(0, 300)}`,
      contextOverflow: true,
    };
  }
  if (AUTH.test(said)) return { kind: "auth_failed", detail: authDetail(said) };
  if (RATE_LIMIT.test(said)) {
    return {
      kind: "failed",
      detail: `the Gemini API is rate limiting this key or its quota is spent; try again later: ${said.slice(0, 300)}`,
    };
  }
  return {
    kind: "failed",
    detail: `the CLI reported an error: ${said.slice(0, 500) || "(no message)"}`,
  };
}

function authDetail(said: string): string {
  const what = /API key not valid|PERMISSION_DENIED|UNAUTHENTICATED|40[13]/.exec(said)?.[0];
  return `the Gemini API refused the credentials (${what ?? said.slice(0, 120)}); check GEMINI_API_KEY in the runner's environment`;
}

function tokensOf(s: GeminiStats): TokenUsage {
  const cached = Math.min(s.cached, s.input_tokens);
  return {
    // The API's promptTokenCount includes the cached tokens; Tether's inputTokens are the uncached.
    inputTokens: s.input ?? Math.max(0, s.input_tokens - cached),
    outputTokens: s.output_tokens,
    cacheReadTokens: cached,
    cacheCreationTokens: 0,
  };
}

/** The turn's tokens and cost: the result line counts this run's calls only, per model. */
export function geminiUsage(ev: GeminiEvidence, wallMs: number): RunUsage {
  const stats = ev.result?.stats ?? null;
  const total: TokenUsage = {
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheCreationTokens: 0,
  };
  let costUsd = 0;
  let model = ev.model;
  let most = -1;
  const models = Object.entries(stats?.models ?? {});
  if (models.length === 0 && stats) models.push([ev.model ?? "", stats]);
  for (const [name, s] of models) {
    const t = tokensOf(s);
    total.inputTokens += t.inputTokens;
    total.outputTokens += t.outputTokens;
    total.cacheReadTokens += t.cacheReadTokens;
    const usd = estimateCostUsd(name || ev.model, t);
    costUsd += usd;
    if (usd > most && name) {
      most = usd;
      model = name;
    }
  }
  const answers = Math.max(0, (ev.after?.answers ?? 0) - (ev.before?.answers ?? 0));
  return {
    ...total,
    costUsd: Math.round(costUsd * 1e6) / 1e6,
    numTurns: answers || (ev.result?.ok ? 1 : 0),
    durationMs: wallMs,
    model,
    contextTokens: ev.after?.lastInputTokens ?? null,
    contextWindow: ev.after?.lastInputTokens != null ? GEMINI_CONTEXT_WINDOW : null,
  };
}

export function geminiToolRan(ev: GeminiEvidence): boolean {
  return ev.tools.size > 0 || (ev.after?.toolCalls ?? 0) > (ev.before?.toolCalls ?? 0);
}
