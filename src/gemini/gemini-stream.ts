/**
 * Gemini CLI's `--output-format stream-json` stream: one JSON object a line
 * (docs/gemini-cli-facts.md, "The stream"). Read by the kit every CLI shares
 * (agent-cli/line-splitter.ts): this file says what each typed line means; a line that is not
 * what the facts describe is counted, never thrown.
 */
import { z } from "zod";
import { jsonLinesParser, lineWithout, readJsonLine } from "../agent-cli/line-splitter.js";
import type { TypedLine, UnreadableLine } from "../agent-cli/line-splitter.js";

/** Token counts as the `result` line's `stats` (and each of its `models`) report them. */
export const GeminiStats = z.looseObject({
  total_tokens: z.number().nonnegative().default(0),
  /** Every prompt token, cached ones included. */
  input_tokens: z.number().nonnegative().default(0),
  output_tokens: z.number().nonnegative().default(0),
  cached: z.number().nonnegative().default(0),
  /** The uncached prompt tokens. */
  input: z.number().nonnegative().optional(),
});
export type GeminiStats = z.infer<typeof GeminiStats>;

const ResultStats = GeminiStats.extend({
  duration_ms: z.number().nonnegative().optional(),
  tool_calls: z.number().nonnegative().optional(),
  models: z.record(z.string(), GeminiStats).optional(),
});
export type GeminiResultStats = z.infer<typeof ResultStats>;

export type GeminiMessage =
  | { kind: "init"; sessionId: string; model: string | null }
  | { kind: "text"; role: "user" | "assistant"; text: string; delta: boolean }
  | { kind: "tool_use"; id: string; name: string; input: unknown }
  | { kind: "tool_result"; id: string; isError: boolean }
  /** A non-fatal problem the CLI reports mid-turn (`error` line, severity warning or error). */
  | { kind: "error"; message: string }
  | {
      kind: "result";
      ok: boolean;
      /** The error's type and message when `status` is `error`. */
      errorType: string | null;
      error: string | null;
      stats: GeminiResultStats | null;
    }
  | { kind: "unknown"; type: string }
  | UnreadableLine;

/** One typed line as a message. */
function readGemini(v: TypedLine): GeminiMessage {
  switch (v.type) {
    case "init":
      return typeof v.session_id === "string"
        ? {
            kind: "init",
            sessionId: v.session_id,
            model: typeof v.model === "string" ? v.model : null,
          }
        : lineWithout(v, "session_id");
    case "message":
      if (v.role !== "user" && v.role !== "assistant") return lineWithout(v, "a role");
      return {
        kind: "text",
        role: v.role,
        text: typeof v.content === "string" ? v.content : "",
        delta: v.delta === true,
      };
    case "tool_use":
      return typeof v.tool_id === "string" && typeof v.tool_name === "string"
        ? { kind: "tool_use", id: v.tool_id, name: v.tool_name, input: v.parameters ?? null }
        : lineWithout(v, "tool_id or tool_name");
    case "tool_result":
      return typeof v.tool_id === "string"
        ? { kind: "tool_result", id: v.tool_id, isError: v.status !== "success" }
        : lineWithout(v, "tool_id");
    case "error":
      return { kind: "error", message: typeof v.message === "string" ? v.message : "" };
    case "result": {
      const e = v.error as { type?: unknown; message?: unknown } | undefined;
      const stats = ResultStats.safeParse(v.stats);
      return {
        kind: "result",
        ok: v.status === "success",
        errorType: typeof e?.type === "string" ? e.type : null,
        error: typeof e?.message === "string" ? e.message : null,
        stats: stats.success ? stats.data : null,
      };
    }
    default:
      return { kind: "unknown", type: v.type };
  }
}

/** Reads one line. Never throws. */
export const parseGeminiLine = (text: string): GeminiMessage => readJsonLine(text, readGemini);

/** Bytes in, messages out, with the counts the outcome reports. */
export const GeminiStreamParser = jsonLinesParser(readGemini);
