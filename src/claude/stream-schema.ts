import { z } from "zod";

/*
 * Schemas for the lines of `claude -p --output-format stream-json --verbose`, one per event
 * type, written from the recorded output in shared/fixtures (Claude Code 2.1.197). Fields this
 * adapter does not read, and fields a newer CLI adds, are accepted and dropped: the objects
 * are z.object (strip), not z.looseObject, because a loose object copies every unknown field
 * of every line (an init line has dozens) and that halved parser throughput on short lines
 * (bench/parser.ts). Only the fields read are checked, and most are optional, because a
 * missing field must degrade a figure, not lose the line. A field the adapter starts to read
 * must be added here.
 */

const count = z.number().nonnegative();
const optionalNumber = z.number().nullish();

/** Token usage of one API call (Messages API shape). */
export const ApiUsage = z.object({
  input_tokens: count.nullish(),
  output_tokens: count.nullish(),
  cache_read_input_tokens: count.nullish(),
  cache_creation_input_tokens: count.nullish(),
});
export type ApiUsage = z.infer<typeof ApiUsage>;

/** Per-model totals on the result line (camelCase, unlike the API's usage). */
export const ModelUsage = z.object({
  inputTokens: count.nullish(),
  outputTokens: count.nullish(),
  cacheReadInputTokens: count.nullish(),
  cacheCreationInputTokens: count.nullish(),
  costUSD: count.nullish(),
  contextWindow: count.nullish(),
});
export type ModelUsage = z.infer<typeof ModelUsage>;

/** `{"type":"system","subtype":"init",…}`: always first; names the session. */
export const SystemInit = z.object({
  type: z.literal("system"),
  subtype: z.literal("init"),
  session_id: z.string().min(1),
  model: z.string().nullish(),
  cwd: z.string().nullish(),
  permissionMode: z.string().nullish(),
  claude_code_version: z.string().nullish(),
  // A malformed tool list must not cost us the session id.
  tools: z.array(z.string()).nullish().catch(null),
  // Each MCP server and whether it started (`connected`, `failed`, `needs-auth`, `pending`).
  mcp_servers: z
    .array(z.looseObject({ name: z.string(), status: z.string() }))
    .nullish()
    .catch(null),
});
export type SystemInit = z.infer<typeof SystemInit>;

/** `system/api_retry`: the CLI is retrying an API call that failed. */
export const SystemApiRetry = z.object({
  type: z.literal("system"),
  subtype: z.literal("api_retry"),
  attempt: z.number(),
  max_retries: optionalNumber,
  retry_delay_ms: optionalNumber,
  error_status: optionalNumber,
  error: z.string().nullish(),
});
export type SystemApiRetry = z.infer<typeof SystemApiRetry>;

/** `system/compact_boundary`: the conversation was compacted. */
export const SystemCompactBoundary = z.object({
  type: z.literal("system"),
  subtype: z.literal("compact_boundary"),
  compact_metadata: z
    .looseObject({
      trigger: z.string().nullish(),
      pre_tokens: optionalNumber,
      post_tokens: optionalNumber,
    })
    .nullish()
    .catch(null),
});
export type SystemCompactBoundary = z.infer<typeof SystemCompactBoundary>;

export const TextBlock = z.object({ type: z.literal("text"), text: z.string() });
export const ToolUseBlock = z.object({
  type: z.literal("tool_use"),
  id: z.string(),
  name: z.string(),
  input: z.unknown(),
});
export const ToolResultBlock = z.object({
  type: z.literal("tool_result"),
  tool_use_id: z.string(),
  is_error: z.boolean().nullish(),
});
/**
 * A content block is checked only when it is used, by its own schema above (observe in
 * run-evidence.ts): a block of a kind nobody reads costs nothing, a broken one loses only
 * itself.
 */
const AnyBlock = z.unknown();

/** `{"type":"assistant",…}`: one model message (or part of one). */
export const AssistantLine = z.object({
  type: z.literal("assistant"),
  message: z.object({
    id: z.string().nullish(),
    model: z.string().nullish(),
    content: z.array(AnyBlock),
    usage: ApiUsage.nullish().catch(null),
  }),
  parent_tool_use_id: z.string().nullish(),
  /** Set on synthetic messages the CLI makes from an API error, e.g. "invalid_request". */
  error: z.string().nullish(),
});
export type AssistantLine = z.infer<typeof AssistantLine>;

/** `{"type":"user",…}`: tool results going back to the model (or a prompt replayed). */
export const UserLine = z.object({
  type: z.literal("user"),
  message: z.object({ content: z.union([z.string(), z.array(AnyBlock)]) }),
  parent_tool_use_id: z.string().nullish(),
});
export type UserLine = z.infer<typeof UserLine>;

/** `{"type":"result",…}`: always last on a run that reached the API. */
export const ResultLine = z.object({
  type: z.literal("result"),
  subtype: z.string(),
  is_error: z.boolean(),
  result: z.string().nullish(),
  session_id: z.string().nullish(),
  num_turns: count.nullish(),
  duration_ms: count.nullish(),
  total_cost_usd: count.nullish(),
  usage: ApiUsage.nullish().catch(null),
  modelUsage: z.record(z.string(), ModelUsage).nullish().catch(null),
  terminal_reason: z.string().nullish(),
  api_error_status: optionalNumber,
  errors: z.array(z.unknown()).nullish(),
});
export type ResultLine = z.infer<typeof ResultLine>;
