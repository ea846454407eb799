/**
 * Codex's `exec --json` stream: one JSON object a line (docs/codex-cli-facts.md, "The stream").
 * Read with the same bounded line splitter as Claude's stream; a line that is not what the
 * facts describe is counted, never thrown.
 */
import { z } from "zod";
import { LineSplitter } from "../agent-cli/line-splitter.js";

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
  | { kind: "unreadable"; reason: string };

const Line = z.looseObject({ type: z.string() });

/** Reads one line. Never throws. */
export function parseCodexLine(text: string): CodexMessage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "unreadable", reason: `not JSON: ${text.slice(0, 120)}` };
  }
  const line = Line.safeParse(value);
  if (!line.success) return { kind: "unreadable", reason: `no "type": ${text.slice(0, 120)}` };
  const v = line.data as Record<string, unknown> & { type: string };
  const bad = (what: string): CodexMessage => ({
    kind: "unreadable",
    reason: `${v.type} without ${what}`,
  });
  switch (v.type) {
    case "thread.started":
      return typeof v.thread_id === "string"
        ? { kind: "thread_started", threadId: v.thread_id }
        : bad("thread_id");
    case "turn.started":
      return { kind: "turn_started" };
    case "item.started":
    case "item.updated":
    case "item.completed": {
      const item = Item.safeParse(v.item);
      if (!item.success) return bad("an item");
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
export class CodexStreamParser {
  private readonly lines: LineSplitter;
  readonly counts = { unreadable: 0, unknown: 0 };
  lastUnreadable: string | undefined;

  constructor(maxLineBytes: number) {
    this.lines = new LineSplitter(maxLineBytes);
  }

  private overlong = 0;

  push(chunk: Buffer): CodexMessage[] {
    return this.read(this.lines.push(chunk));
  }

  end(): CodexMessage[] {
    return this.read(this.lines.end());
  }

  private read(lines: string[]): CodexMessage[] {
    // Lines too long to keep are unreadable too.
    this.counts.unreadable += this.lines.overlongLines - this.overlong;
    this.overlong = this.lines.overlongLines;
    const out: CodexMessage[] = [];
    for (const text of lines) {
      const m = parseCodexLine(text);
      if (m.kind === "unreadable") {
        this.counts.unreadable++;
        this.lastUnreadable = m.reason;
      } else if (m.kind === "unknown") this.counts.unknown++;
      out.push(m);
    }
    return out;
  }
}
