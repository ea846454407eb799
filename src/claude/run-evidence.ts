import type { RunEvent, TokenUsage } from "../agent-cli/runtime-adapter.js";
import { ownResult, type CostBefore } from "./session-cost.js";
import type { ApiUsage, ResultLine } from "./stream-schema.js";
import type { StreamMessage } from "./stream-parser.js";
import { TextBlock, ToolResultBlock, ToolUseBlock } from "./stream-schema.js";
import { anthropicCostUsd } from "../providers/anthropic/pricing.js";

/** What the stream has shown so far: the facts the outcome is judged on. */
export interface RunEvidence {
  /** From the first init line only: later ones never change the session a run pinned. */
  init: Extract<RunEvent, { type: "init" }> | undefined;
  /** The last `error` an assistant line carried (the CLI marks API errors this way). */
  assistantError: string | undefined;
  /** Usage of the last top-level, real (not synthetic) model call: how full the context is. */
  lastCallUsage: TokenUsage | undefined;
  /** Model of that call. */
  lastCallModel: string | undefined;
  /** Usage per model message id, for totals when the result line never came. */
  callUsage: Map<string, { usage: TokenUsage; model: string | undefined }>;
  toolUses: number;
  apiRetries: number;
  /** The first retry for a 401 or 403: credentials the API refuses. */
  authRetry: { status: number; error: string | null } | undefined;
  compactions: number;
  result: ResultLine | undefined;
  /** The last text the model wrote at top level (the answer, if the result line is lost). */
  lastText: string | undefined;
  /** A resumed session's totals before this run (session-cost.ts), taken off its result. */
  costBefore: CostBefore | undefined;
  /** A resumed session's transcript and its size before this run (session-entry.ts). */
  transcriptBefore: { file: string; size: number } | undefined;
  /** The message this run's first line in the transcript hangs from (session-entry.ts). */
  entry: string | undefined;
}

export function newEvidence(): RunEvidence {
  return {
    init: undefined,
    assistantError: undefined,
    lastCallUsage: undefined,
    lastCallModel: undefined,
    callUsage: new Map(),
    toolUses: 0,
    apiRetries: 0,
    authRetry: undefined,
    compactions: 0,
    result: undefined,
    lastText: undefined,
    costBefore: undefined,
    transcriptBefore: undefined,
    entry: undefined,
  };
}

/** Messages marked with this model are made by the CLI itself (an API error shown as text). */
const SYNTHETIC_MODEL = "<synthetic>";

/** Adds one message to the evidence; returns the events it makes, in order. */
export function observe(evidence: RunEvidence, message: StreamMessage): RunEvent[] {
  switch (message.kind) {
    case "init": {
      if (evidence.init) return [];
      const { line } = message;
      evidence.init = {
        type: "init",
        sessionId: line.session_id,
        model: line.model ?? null,
        cwd: line.cwd ?? null,
        cliVersion: line.claude_code_version ?? null,
        permissionMode: line.permissionMode ?? null,
        tools: line.tools ?? [],
        mcpServers: (line.mcp_servers ?? []).map((m) => ({ name: m.name, status: m.status })),
      };
      return [evidence.init];
    }
    case "api_retry": {
      const { line } = message;
      evidence.apiRetries++;
      const status = line.error_status ?? null;
      if ((status === 401 || status === 403) && !evidence.authRetry) {
        evidence.authRetry = { status, error: line.error ?? null };
      }
      return [
        {
          type: "api_retry",
          attempt: line.attempt,
          maxRetries: line.max_retries ?? null,
          errorStatus: status,
          error: line.error ?? null,
          retryDelayMs: line.retry_delay_ms ?? null,
        },
      ];
    }
    case "compact_boundary": {
      evidence.compactions++;
      const meta = message.line.compact_metadata;
      return [
        {
          type: "compacted",
          trigger: meta?.trigger ?? null,
          preTokens: meta?.pre_tokens ?? null,
          postTokens: meta?.post_tokens ?? null,
        },
      ];
    }
    case "assistant":
      return observeAssistant(evidence, message.line);
    case "user": {
      const { content } = message.line.message;
      if (typeof content === "string") return [];
      const events: RunEvent[] = [];
      for (const block of content) {
        if (blockType(block) !== "tool_result") continue;
        const parsed = ToolResultBlock.safeParse(block);
        if (parsed.success) {
          const output = resultText((block as { content?: unknown }).content);
          events.push({
            type: "tool_result",
            toolUseId: parsed.data.tool_use_id,
            isError: parsed.data.is_error === true,
            ...(output !== undefined ? { output } : {}),
          });
        }
      }
      return events;
    }
    case "result": {
      // The run's own totals, also when the CLI reports the session's (2.1.332 on a resume).
      const line = ownResult(message.line, evidence.costBefore);
      evidence.result = line;
      return [
        {
          type: "result",
          subtype: line.subtype,
          isError: line.is_error,
          text: line.result ?? null,
          sessionId: line.session_id ?? null,
          terminalReason: line.terminal_reason ?? null,
          apiErrorStatus: line.api_error_status ?? null,
          numTurns: line.num_turns ?? null,
          costUsd: line.total_cost_usd ?? null,
          errors: resultErrors(line),
        },
      ];
    }
    case "unknown":
    case "unreadable":
      return [];
  }
}

function observeAssistant(
  evidence: RunEvidence,
  line: Extract<StreamMessage, { kind: "assistant" }>["line"],
): RunEvent[] {
  const parent = line.parent_tool_use_id ?? null;
  const { message } = line;
  if (line.error) evidence.assistantError = line.error;
  const model = message.model ?? undefined;
  if (message.usage && model !== SYNTHETIC_MODEL) {
    const usage = tokenUsage(message.usage);
    if (message.id) evidence.callUsage.set(message.id, { usage, model });
    if (parent === null) {
      evidence.lastCallUsage = usage;
      evidence.lastCallModel = model;
    }
  }
  const events: RunEvent[] = [];
  if (message.usage && model !== SYNTHETIC_MODEL && message.id) events.push(usageSoFar(evidence));
  for (const block of message.content) {
    const type = blockType(block);
    if (type === "text") {
      const parsed = TextBlock.safeParse(block);
      if (!parsed.success) continue;
      if (parent === null) evidence.lastText = parsed.data.text;
      events.push({ type: "text", text: parsed.data.text, parentToolUseId: parent });
    } else if (type === "tool_use") {
      const parsed = ToolUseBlock.safeParse(block);
      if (!parsed.success) continue;
      evidence.toolUses++;
      events.push({
        type: "tool_use",
        id: parsed.data.id,
        name: parsed.data.name,
        input: parsed.data.input,
        parentToolUseId: parent,
      });
    }
  }
  return events;
}

/** The run's tokens and estimated cost so far: every model call it made, each counted once. */
function usageSoFar(evidence: RunEvidence): RunEvent {
  let inputTokens = 0;
  let outputTokens = 0;
  let costUsd = 0;
  for (const { usage, model } of evidence.callUsage.values()) {
    inputTokens += usage.inputTokens + usage.cacheReadTokens + usage.cacheCreationTokens;
    outputTokens += usage.outputTokens;
    costUsd += anthropicCostUsd({ ...usage, webSearches: 0, model: model ?? null });
  }
  return { type: "usage", inputTokens, outputTokens, costUsd };
}

/** A tool_result block's content as text: a string, or its text blocks joined. */
function resultText(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  const texts = content.flatMap((b: unknown) =>
    b && typeof b === "object" && typeof (b as { text?: unknown }).text === "string"
      ? [(b as { text: string }).text]
      : [],
  );
  return texts.length ? texts.join("\n") : undefined;
}

function blockType(block: unknown): unknown {
  return typeof block === "object" && block !== null
    ? (block as { type?: unknown }).type
    : undefined;
}

export function tokenUsage(usage: ApiUsage): TokenUsage {
  return {
    inputTokens: usage.input_tokens ?? 0,
    outputTokens: usage.output_tokens ?? 0,
    cacheReadTokens: usage.cache_read_input_tokens ?? 0,
    cacheCreationTokens: usage.cache_creation_input_tokens ?? 0,
  };
}

/** The result line's `errors`, as strings. */
export function resultErrors(line: ResultLine): string[] {
  return (line.errors ?? []).map((e) => (typeof e === "string" ? e : JSON.stringify(e)));
}
