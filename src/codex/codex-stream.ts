/**
 * Codex's `exec --json` stream: one JSON object a line (docs/codex-cli-facts.md, "The stream").
 * Read by the kit every CLI shares (agent-cli/line-splitter.ts): this file says what each
 * typed line means; a line that is not what the facts describe is counted, never thrown.
 */
import { z } from "zod";
import { jsonLinesParser, lineWithout } from "../agent-cli/line-splitter.js";
import type { TypedLine, UnreadableLine } from "../agent-cli/line-splitter.js";

/** Token totals as `turn.completed` and the rollout's `token_count` report them. */
export const CodexUsage = z.object({
  input_tokens: z.number().nonnegative().default(0),
  cached_input_tokens: z.number().nonnegative().default(0),
  cache_write_input_tokens: z.number().nonnegative().default(0),
  output_tokens: z.number().nonnegative().default(0),
  reasoning_output_tokens: z.number().nonnegative().default(0),
});
export type CodexUsage = z.infer<typeof CodexUsage>;

const Item = z.looseObject({ id: z.string().optional(), type: z.string() });
export type CodexItem = z.infer<typeof Item>;

export type CodexMessage =
  | { kind: "thread_started"; threadId: string }
  | { kind: "turn_started" }
  | { kind: "item"; phase: "started" | "updated" | "completed"; item: CodexItem }
  /** A retry in progress (`Reconnecting... N/M (…)`), or the fatal error before turn.failed. */
  | { kind: "error"; message: string }
  | { kind: "turn_completed"; usage: CodexUsage | null }
  | { kind: "turn_failed"; message: string }
  | { kind: "unknown"; type: string }
  | UnreadableLine;

/** One typed line as a message. */
function readCodex(v: TypedLine): CodexMessage {
  switch (v.type) {
    case "thread.started":
      return typeof v.thread_id === "string"
        ? { kind: "thread_started", threadId: v.thread_id }
        : lineWithout(v, "thread_id");
    case "turn.started":
      return { kind: "turn_started" };
    case "item.started":
    case "item.updated":
    case "item.completed": {
      const item = Item.safeParse(v.item);
      if (!item.success) return lineWithout(v, "an item");
      return {
        kind: "item",
        phase: v.type.slice("item.".length) as "started" | "updated" | "completed",
        item: item.data,
      };
    }
    case "error":
      return { kind: "error", message: typeof v.message === "string" ? v.message : "" };
    case "turn.completed": {
      const usage = CodexUsage.safeParse(v.usage);
      return { kind: "turn_completed", usage: usage.success ? usage.data : null };
    }
    case "turn.failed": {
      const e = v.error as { message?: unknown } | undefined;
      return {
        kind: "turn_failed",
        message: typeof e?.message === "string" ? e.message : "",
      };
    }
    default:
      return { kind: "unknown", type: v.type };
  }
}

/** Bytes in, messages out, with the counts the outcome reports. */
export const CodexStreamParser = jsonLinesParser(readCodex);
