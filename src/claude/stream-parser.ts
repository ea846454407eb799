import type { z } from "zod";
import {
  DEFAULT_MAX_LINE_BYTES,
  JsonLinesParser,
  readJsonLine,
  type TypedLine,
  type UnreadableLine,
} from "../agent-cli/line-splitter.js";
import {
  AssistantLine,
  ResultLine,
  SystemApiRetry,
  SystemCompactBoundary,
  SystemInit,
  UserLine,
} from "./stream-schema.js";

/** One line of the CLI's stream-json output, read and checked. */
export type StreamMessage =
  | { kind: "init"; line: SystemInit }
  | { kind: "api_retry"; line: SystemApiRetry }
  | { kind: "compact_boundary"; line: SystemCompactBoundary }
  | { kind: "assistant"; line: AssistantLine }
  | { kind: "user"; line: UserLine }
  | { kind: "result"; line: ResultLine }
  /** Well-formed, but of a type or subtype this adapter does not use (harmless). */
  | { kind: "unknown"; type: string; subtype: string | null }
  /** Not JSON, not an object with a type, or a known type that failed its schema. */
  | UnreadableLine;

const SYSTEM_SCHEMAS: Record<string, [z.ZodType, StreamMessage["kind"]]> = {
  init: [SystemInit, "init"],
  api_retry: [SystemApiRetry, "api_retry"],
  compact_boundary: [SystemCompactBoundary, "compact_boundary"],
};
const TOP_SCHEMAS: Record<string, [z.ZodType, StreamMessage["kind"]]> = {
  assistant: [AssistantLine, "assistant"],
  user: [UserLine, "user"],
  result: [ResultLine, "result"],
};

/** One typed line as a message: its schema by `type` (and a system line's `subtype`). */
function readClaudeLine(value: TypedLine): StreamMessage {
  const { type, subtype } = value;
  const route =
    type === "system"
      ? typeof subtype === "string"
        ? SYSTEM_SCHEMAS[subtype]
        : undefined
      : Object.hasOwn(TOP_SCHEMAS, type)
        ? TOP_SCHEMAS[type]
        : undefined;
  if (!route) {
    return { kind: "unknown", type, subtype: typeof subtype === "string" ? subtype : null };
  }
  const [schema, kind] = route;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join(".") : "(line)";
    return {
      kind: "unreadable",
      reason: `${type}${typeof subtype === "string" ? `/${subtype}` : ""} line: ${where}: ${issue?.message ?? "invalid"}`,
    };
  }
  return { kind, line: parsed.data } as StreamMessage;
}

/** Reads one line. Never throws: bad input is reported as `unreadable`. */
export function parseStreamLine(text: string): StreamMessage {
  return readJsonLine(text, readClaudeLine);
}

/**
 * Byte chunks in, checked messages out, with bounded memory (see JsonLinesParser). Lines too
 * long to keep count as unreadable.
 */
export class StreamParser extends JsonLinesParser<StreamMessage> {
  constructor(maxLineBytes = DEFAULT_MAX_LINE_BYTES) {
    super(readClaudeLine, maxLineBytes);
  }
}
