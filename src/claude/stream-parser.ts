import type { z } from "zod";
import { DEFAULT_MAX_LINE_BYTES, LineSplitter } from "../agent-cli/line-splitter.js";
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
  | { kind: "unreadable"; reason: string };

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

/** Reads one line. Never throws: bad input is reported as `unreadable`. */
export function parseStreamLine(text: string): StreamMessage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "unreadable", reason: `not JSON: ${preview(text)}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { kind: "unreadable", reason: `not a JSON object: ${preview(text)}` };
  }
  const { type, subtype } = value as { type?: unknown; subtype?: unknown };
  if (typeof type !== "string") {
    return { kind: "unreadable", reason: `no "type": ${preview(text)}` };
  }
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

function preview(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

/** Counters a StreamParser keeps. */
export interface ParseCounts {
  lines: number;
  unreadable: number;
  unknown: number;
  bytes: number;
}

/**
 * Byte chunks in, checked messages out, with bounded memory (see LineSplitter). Lines too long
 * to keep count as unreadable.
 */
export class StreamParser {
  private readonly splitter: LineSplitter;
  readonly counts: ParseCounts = { lines: 0, unreadable: 0, unknown: 0, bytes: 0 };
  /** The most recent reason a line could not be read (for a failure's detail). */
  lastUnreadable: string | undefined;

  constructor(maxLineBytes = DEFAULT_MAX_LINE_BYTES) {
    this.splitter = new LineSplitter(maxLineBytes);
  }

  push(chunk: Buffer): StreamMessage[] {
    this.counts.bytes += chunk.length;
    return this.read(this.splitter.push(chunk));
  }

  end(): StreamMessage[] {
    return this.read(this.splitter.end());
  }

  private read(lines: string[]): StreamMessage[] {
    const out: StreamMessage[] = [];
    for (const line of lines) {
      const message = parseStreamLine(line);
      this.counts.lines++;
      if (message.kind === "unreadable") {
        this.counts.unreadable++;
        this.lastUnreadable = message.reason;
      } else if (message.kind === "unknown") {
        this.counts.unknown++;
      }
      out.push(message);
    }
    // Lines dropped for length are reported after the chunk's readable ones; their order
    // does not matter, only that they are counted.
    const overlong = this.splitter.overlongLines - this.seenOverlong;
    if (overlong > 0) {
      this.seenOverlong = this.splitter.overlongLines;
      const reason = `a line longer than ${this.splitter.maxLineBytes} bytes was skipped`;
      this.counts.lines += overlong;
      this.counts.unreadable += overlong;
      this.lastUnreadable = reason;
      for (let i = 0; i < overlong; i++) out.push({ kind: "unreadable", reason });
    }
    return out;
  }

  private seenOverlong = 0;
}
