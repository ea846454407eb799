/**
 * What an opencode run showed, and what it comes to: the events the runner sees, when to stop
 * the CLI early, the outcome in the same set as Claude's, and the turn's usage and cost. Every
 * rule here rests on a case in docs/opencode-cli-facts.md ("Failures seen").
 */
import { classifyExit, firstLine, resumedElsewhere } from "../agent-cli/outcome.js";
import { initEvent, resultEvent } from "../agent-cli/dialect-events.js";
import type { Classification, ClassifyInput, StopReason } from "../agent-cli/outcome.js";
import { anthropicCostUsd } from "../providers/anthropic/pricing.js";
import type { RunEvent, RunUsage, TokenUsage } from "../agent-cli/runtime-adapter.js";
import type { OpencodeMessage } from "./opencode-stream.js";

export interface OpencodeEvidence {
  /** From the first line that named a session. */
  sessionId: string | undefined;
  /** The model the run was started with (`anthropic/<model>` on the command line). */
  model: string | null;
  /** Tool calls seen, by call id. */
  tools: Set<string>;
  /** The text of the last step that wrote any, and whether a step ended the turn after it. */
  lastText: string | undefined;
  /** The last step_finish's reason (`stop` ends the turn, `tool-calls` goes on). */
  lastFinish: string | undefined;
  /** Errors the CLI printed, in order; `afterError` counts steps finished after the last one. */
  errors: Array<{ name: string; message: string; statusCode: number | null }>;
  stepsAfterError: number;
  /** The CLI overflowed and compacted the session in this run (then went on). */
  compacted: boolean;
  /** Summed over the run's steps. */
  tokens: TokenUsage;
  cost: number;
  steps: number;
  /** The last step's context: input + cache read + cache write. */
  lastContext: number | null;
  /** The operator's MCP servers the run was given, by name (their tools are `<server>_<tool>`). */
  mcpServers: string[];
}

export function newOpencodeEvidence(): OpencodeEvidence {
  return {
    sessionId: undefined,
    model: null,
    tools: new Set(),
    lastText: undefined,
    lastFinish: undefined,
    errors: [],
    stepsAfterError: 0,
    compacted: false,
    tokens: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 },
    cost: 0,
    steps: 0,
    lastContext: null,
    mcpServers: [],
  };
}

/**
 * opencode names an MCP tool `<server>_<tool>`; the runner counts `mcp__<server>__<tool>`, as
 * Claude names them. A server name has no `_` (src/config/mcp-servers.ts), so the first `_`
 * ends it; a tool of no server the run was given keeps its name.
 */
export function opencodeToolName(ev: Pick<OpencodeEvidence, "mcpServers">, tool: string): string {
  const at = tool.indexOf("_");
  if (at <= 0 || !ev.mcpServers.includes(tool.slice(0, at))) return tool;
  return `mcp__${tool.slice(0, at)}__${tool.slice(at + 1)}`;
}

const OVERFLOW = /ContextOverflowError|prompt is too long|context.{0,20}(length|window)/i;
const RATE_LIMIT = /rate.?limit|429|overloaded/i;
/** What the CLI prints (stderr, exit 1) for a `--session` it does not hold. */
const NO_SESSION = /Session not found/;

function isAuth(e: { statusCode: number | null; name: string; message: string }): boolean {
  return e.statusCode === 401 || e.statusCode === 403;
}

/** Adds one message to the evidence; returns the events it makes. */
export function observeOpencode(ev: OpencodeEvidence, m: OpencodeMessage): RunEvent[] {
  if (m.kind === "unreadable") return [];
  const events: RunEvent[] = [];
  if (ev.sessionId === undefined) {
    ev.sessionId = m.sessionId;
    if (m.sessionId !== undefined) events.push(initEvent(m.sessionId, ev.model));
  }
  // A sub-agent's lines name its own session: they are not the turn's.
  if (m.sessionId !== ev.sessionId) return events;
  switch (m.kind) {
    case "text":
      if (m.synthetic) return events;
      ev.lastText = m.text;
      events.push({ type: "text", text: m.text, parentToolUseId: null });
      return events;
    case "tool_use": {
      const id = m.id || `${m.tool}-${ev.tools.size}`;
      if (!ev.tools.has(id)) {
        ev.tools.add(id);
        const name = opencodeToolName(ev, m.tool);
        events.push({ type: "tool_use", id, name, input: m.input, parentToolUseId: null });
      }
      if (m.status === "completed" || m.status === "error")
        events.push({
          type: "tool_result",
          toolUseId: id,
          isError: m.status === "error" || (m.exitCode !== null && m.exitCode !== 0),
        });
      return events;
    }
    case "step_finish": {
      ev.steps++;
      ev.lastFinish = m.reason;
      if (ev.errors.length) ev.stepsAfterError++;
      if (m.tokens) {
        ev.tokens.inputTokens += m.tokens.input;
        ev.tokens.outputTokens += m.tokens.output + m.tokens.reasoning;
        ev.tokens.cacheReadTokens += m.tokens.cache.read;
        ev.tokens.cacheCreationTokens += m.tokens.cache.write;
        ev.lastContext = m.tokens.input + m.tokens.cache.read + m.tokens.cache.write;
      }
      if (m.cost !== null) ev.cost += m.cost;
      if (m.reason !== "tool-calls") {
        const { sessionId, lastText: text, steps: numTurns, cost: costUsd } = ev;
        events.push(resultEvent({ ok: true, sessionId, text, numTurns, costUsd }));
      }
      return events;
    }
    case "error": {
      ev.errors.push({ name: m.name, message: m.message, statusCode: m.statusCode });
      ev.stepsAfterError = 0;
      if (OVERFLOW.test(`${m.name} ${m.message}`)) {
        // The CLI compacts the session and goes on in the same run (facts, "Overflow").
        ev.compacted = true;
        events.push({ type: "compacted", trigger: "auto", preTokens: null, postTokens: null });
      } else if (m.statusCode === 429 || m.statusCode === 529) {
        events.push({
          type: "api_retry",
          attempt: ev.errors.length,
          maxRetries: null,
          errorStatus: m.statusCode,
          error: m.message,
          retryDelayMs: null,
        });
      }
      return events;
    }
    case "step_start":
    case "unknown":
      return events;
  }
}

/**
 * Stop the CLI now? On a 401/403 (the key is refused; nothing after it can succeed), and when
 * a resume reports another session than the one asked for.
 */
export function opencodeEarlyStop(
  m: OpencodeMessage,
  ev: OpencodeEvidence,
  resumeSessionId: string | undefined,
): { reason: StopReason; detail: string } | undefined {
  if (m.kind === "error" && isAuth(m)) return { reason: "auth_failed", detail: authDetail(m) };
  return m.kind === "unreadable" ? undefined : resumedElsewhere(resumeSessionId, ev.sessionId);
}

/**
 * The outcome, by the ladder every CLI's is judged by (classifyExit). opencode prints no last
 * word: what its steps showed is read only when it ended by itself, so any stop outranks it.
 */
export function classifyOpencode({
  resumeSessionId,
  state: ev,
  exit,
}: ClassifyInput<OpencodeEvidence>): Classification {
  const started = ev.sessionId !== undefined;
  return classifyExit(
    { ...exit, stderrTail: stripAnsi(exit.stderrTail) },
    {
      resumeSessionId,
      started,
      noResume: started
        ? undefined
        : {
            pattern: NO_SESSION,
            detail: () =>
              `the CLI does not hold session ${resumeSessionId} (not restored, or made elsewhere)`,
          },
      ended: () => fromSteps(ev),
      lastly: ({ how, stderr }) =>
        /^error|Error: /m.test(stderr) && !started
          ? { kind: "failed", detail: `the CLI ${how}: ${firstLine(stderr)}` }
          : undefined,
    },
  );
}

/** What the steps showed: an answer, the error the CLI ended on, or nothing to go by. */
function fromSteps(ev: OpencodeEvidence): Classification | undefined {
  const lastError = ev.errors.at(-1);
  // Finished: the last step ended the turn, and no error came after it. An overflow the CLI
  // compacted its way out of ends this way too (its exit code is 1 all the same).
  if (
    ev.lastFinish !== undefined &&
    ev.lastFinish !== "tool-calls" &&
    (!lastError || ev.stepsAfterError > 0)
  ) {
    return {
      kind: "success",
      detail: ev.compacted ? "answered (the CLI compacted the session on the way)" : "answered",
    };
  }
  if (!lastError) return undefined;
  const said = `${lastError.name}: ${lastError.message}`;
  if (OVERFLOW.test(said))
    return {
      kind: "poisoned",
      detail: `the session no longer fits the model's context window, even compacted: ${said}`,
      contextOverflow: true,
    };
  if (isAuth(lastError)) return { kind: "auth_failed", detail: authDetail(lastError) };
  if (RATE_LIMIT.test(said) || lastError.statusCode === 429)
    return {
      kind: "failed",
      detail: `the Anthropic API is rate limiting this key or is overloaded; try again later: ${said}`,
    };
  return { kind: "failed", detail: `the CLI reported an error: ${said}` };
}

function stripAnsi(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\u001b\[[0-9;]*m/g, "");
}

function authDetail(e: { statusCode: number | null; message: string }): string {
  return `the Anthropic API refused the credentials (${e.statusCode ?? "?"}: ${e.message.slice(0, 120)}); check ANTHROPIC_API_KEY in the runner's environment`;
}

export function opencodeUsage(ev: OpencodeEvidence, wallMs: number): RunUsage {
  // The CLI prices each step from its bundled model list; where it said nothing (an unknown
  // model: cost 0 with tokens), Tether's Claude price table stands in.
  const priced =
    ev.cost > 0 || ev.steps === 0
      ? ev.cost
      : anthropicCostUsd({ model: ev.model ?? "", webSearches: 0, ...ev.tokens });
  return {
    ...ev.tokens,
    costUsd: priced,
    numTurns: ev.steps,
    durationMs: wallMs,
    model: ev.model,
    contextTokens: ev.lastContext,
    contextWindow: null,
  };
}

export function opencodeToolRan(ev: OpencodeEvidence): boolean {
  return ev.tools.size > 0;
}
