/**
 * opencode's `run --format json` stream: one JSON object a line, each naming the session
 * (docs/opencode-cli-facts.md, "The stream"). Read by the kit every CLI shares
 * (agent-cli/line-splitter.ts): this file says what each typed line means; a line that is not
 * what the facts describe is counted, never thrown.
 */
import { z } from "zod";
import { jsonLinesParser, lineWithout, readJsonLine } from "../agent-cli/line-splitter.js";
import type { TypedLine, UnreadableLine } from "../agent-cli/line-splitter.js";

/** A step's tokens, as `step_finish` reports them. */
export const OpencodeTokens = z.object({
  input: z.number().nonnegative().default(0),
  output: z.number().nonnegative().default(0),
  reasoning: z.number().nonnegative().default(0),
  cache: z
    .object({
      read: z.number().nonnegative().default(0),
      write: z.number().nonnegative().default(0),
    })
    .default({ read: 0, write: 0 }),
});
export type OpencodeTokens = z.infer<typeof OpencodeTokens>;

export type OpencodeMessage =
  /** Every line but an unreadable one names its session; this is the first such name. */
  | { kind: "step_start"; sessionId: string }
  | { kind: "text"; sessionId: string; text: string; synthetic: boolean }
  | {
      kind: "tool_use";
      sessionId: string;
      id: string;
      tool: string;
      status: string;
      input: unknown;
      exitCode: number | null;
    }
  | {
      kind: "step_finish";
      sessionId: string;
      reason: string;
      tokens: OpencodeTokens | null;
      cost: number | null;
    }
  | {
      kind: "error";
      sessionId: string;
      name: string;
      message: string;
      statusCode: number | null;
    }
  | { kind: "unknown"; sessionId: string | undefined; type: string }
  | UnreadableLine;

const Part = z.looseObject({ type: z.string().optional() });

/** One typed line as a message: every line names its session. */
function readOpencode(v: TypedLine): OpencodeMessage {
  const sessionId = v.sessionID;
  if (typeof sessionId !== "string") return lineWithout(v, "sessionID");
  const part = Part.safeParse(v.part);
  const p = (part.success ? part.data : {}) as Record<string, unknown>;
  switch (v.type) {
    case "step_start":
      return { kind: "step_start", sessionId };
    case "text":
      return {
        kind: "text",
        sessionId,
        text: typeof p.text === "string" ? p.text : "",
        synthetic: p.synthetic === true,
      };
    case "tool_use": {
      const state = (p.state ?? {}) as Record<string, unknown>;
      const meta = (state.metadata ?? {}) as Record<string, unknown>;
      return {
        kind: "tool_use",
        sessionId,
        id: typeof p.callID === "string" ? p.callID : typeof p.id === "string" ? p.id : "",
        tool: typeof p.tool === "string" ? p.tool : "unknown",
        status: typeof state.status === "string" ? state.status : "unknown",
        input: state.input,
        exitCode: typeof meta.exit === "number" ? meta.exit : null,
      };
    }
    case "step_finish": {
      const tokens = OpencodeTokens.safeParse(p.tokens);
      return {
        kind: "step_finish",
        sessionId,
        reason: typeof p.reason === "string" ? p.reason : "",
        tokens: tokens.success ? tokens.data : null,
        cost: typeof p.cost === "number" && Number.isFinite(p.cost) ? p.cost : null,
      };
    }
    case "error": {
      const e = (v.error ?? {}) as { name?: unknown; data?: Record<string, unknown> };
      const data = e.data ?? {};
      return {
        kind: "error",
        sessionId,
        name: typeof e.name === "string" ? e.name : "Error",
        message: typeof data.message === "string" ? data.message : "",
        statusCode: typeof data.statusCode === "number" ? data.statusCode : null,
      };
    }
    default:
      return { kind: "unknown", sessionId, type: v.type };
  }
}

/** Reads one line. Never throws. */
export const parseOpencodeLine = (text: string): OpencodeMessage =>
  readJsonLine(text, readOpencode);

/** Bytes in, messages out, with the counts the outcome reports. */
export const OpencodeStreamParser = jsonLinesParser(readOpencode);
