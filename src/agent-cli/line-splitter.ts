/**
 * Every CLI's stream is JSON lines: bytes are split into lines here (LineSplitter, bounded
 * memory), and each line read as a JSON object with a string `type` (JsonLinesParser), which
 * the CLI's dialect then turns into its own message. A line that cannot be read is a message
 * of kind `unreadable`, counted; it never throws.
 */
import type { DialectParser } from "./cli-dialect.js";

/** Default longest line kept: 32 MiB (one tool result can be large; the whole stream is not). */
export const DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024;

/**
 * Splits a byte stream into lines with bounded memory. Only the current, unfinished line is
 * held; a line longer than `maxLineBytes` is dropped as soon as it passes the limit (its bytes
 * are counted, not kept) and reported once its end arrives. Splitting happens on bytes, so a
 * UTF-8 character cut between two chunks is decoded whole.
 */
export class LineSplitter {
  private parts: Buffer[] = [];
  private pendingBytes = 0;
  private overlong = false;
  /** Lines dropped for being longer than the limit. */
  overlongLines = 0;

  constructor(readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES) {
    if (!(maxLineBytes >= 1)) throw new RangeError("maxLineBytes must be at least 1");
  }

  /** Feeds a chunk; returns the lines it completed (without "\n" or "\r\n"; blank lines skipped). */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) break;
      this.finishLine(chunk, start, nl, lines);
      start = nl + 1;
    }
    if (start < chunk.length) this.keep(chunk, start, chunk.length);
    return lines;
  }

  /** Ends the stream; returns the last line if it had no newline. */
  end(): string[] {
    const lines: string[] = [];
    if (this.overlong) {
      this.overlongLines++;
    } else if (this.pendingBytes > 0) {
      pushLine(lines, decode(this.parts, this.pendingBytes));
    }
    this.reset();
    return lines;
  }

  private finishLine(chunk: Buffer, start: number, end: number, lines: string[]): void {
    if (this.overlong || this.pendingBytes + (end - start) > this.maxLineBytes) {
      this.overlongLines++;
      this.reset();
      return;
    }
    if (this.pendingBytes === 0) {
      pushLine(lines, chunk.toString("utf8", start, end));
    } else {
      this.parts.push(chunk.subarray(start, end));
      pushLine(lines, decode(this.parts, this.pendingBytes + (end - start)));
      this.reset();
    }
  }

  private keep(chunk: Buffer, start: number, end: number): void {
    if (this.overlong) return;
    if (this.pendingBytes + (end - start) > this.maxLineBytes) {
      this.overlong = true;
      this.parts = [];
      this.pendingBytes = 0;
      return;
    }
    // Copy: a subarray would pin the whole chunk for as long as the line grows.
    this.parts.push(Buffer.from(chunk.subarray(start, end)));
    this.pendingBytes += end - start;
  }

  private reset(): void {
    this.parts = [];
    this.pendingBytes = 0;
    this.overlong = false;
  }
}

function decode(parts: Buffer[], total: number): string {
  return (parts.length === 1 ? parts[0]! : Buffer.concat(parts, total)).toString("utf8");
}

function pushLine(lines: string[], line: string): void {
  const text = line.endsWith("\r") ? line.slice(0, -1) : line;
  // The usual line starts with "{"; only a line starting with blank space needs a closer look.
  if (text.length > 0 && (text.charCodeAt(0) > 32 || text.trim() !== "")) lines.push(text);
}

/** A line the stream could not be read as: not JSON, no `type`, or not what the CLI's facts say. */
export interface UnreadableLine {
  kind: "unreadable";
  reason: string;
}

/** One line of a CLI's stream: a JSON object with a string `type` (the rest unchecked). */
export type TypedLine = Record<string, unknown> & { type: string };

/** A line of a known type that lacks what the CLI's facts say it has: "thread.started without thread_id". */
export function lineWithout(line: TypedLine, what: string): UnreadableLine {
  return { kind: "unreadable", reason: `${line.type} without ${what}` };
}

/**
 * Reads one line: JSON, an object, with a string `type`; then the dialect's `read` makes it a
 * message (its own `unknown` kind for a type it does not use). Never throws: a line that fails
 * any of these, or makes `read` throw, is `unreadable` with the reason.
 */
export function readJsonLine<M>(text: string, read: (line: TypedLine) => M): M | UnreadableLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "unreadable", reason: `not JSON: ${preview(text)}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { kind: "unreadable", reason: `not a JSON object: ${preview(text)}` };
  }
  const { type } = value as { type?: unknown };
  if (typeof type !== "string") {
    return { kind: "unreadable", reason: `no "type": ${preview(text)}` };
  }
  try {
    return read(value as TypedLine);
  } catch (err) {
    return { kind: "unreadable", reason: `${type} line: ${(err as Error).message}` };
  }
}

function preview(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

/** Counters a JsonLinesParser keeps (the run's outcome reports `unreadable` and `unknown`). */
export interface ParseCounts {
  lines: number;
  unreadable: number;
  unknown: number;
  bytes: number;
}

/**
 * A CLI's stream parser: byte chunks in, its messages out, with bounded memory (LineSplitter).
 * `read` is the dialect's reading of one typed line (see readJsonLine). A line too long to keep
 * is an `unreadable` message too, after the chunk's other lines.
 */
export class JsonLinesParser<M extends { kind: string }> implements DialectParser<
  M | UnreadableLine
> {
  private readonly splitter: LineSplitter;
  private seenOverlong = 0;
  readonly counts: ParseCounts = { lines: 0, unreadable: 0, unknown: 0, bytes: 0 };
  /** The most recent reason a line could not be read (for a failure's detail). */
  lastUnreadable: string | undefined;

  constructor(
    private readonly read: (line: TypedLine) => M,
    maxLineBytes = DEFAULT_MAX_LINE_BYTES,
  ) {
    this.splitter = new LineSplitter(maxLineBytes);
  }

  push(chunk: Buffer): Array<M | UnreadableLine> {
    this.counts.bytes += chunk.length;
    return this.readLines(this.splitter.push(chunk));
  }

  end(): Array<M | UnreadableLine> {
    return this.readLines(this.splitter.end());
  }

  private readLines(lines: string[]): Array<M | UnreadableLine> {
    const out: Array<M | UnreadableLine> = [];
    for (const line of lines) out.push(this.count(readJsonLine(line, this.read)));
    const overlong = this.splitter.overlongLines - this.seenOverlong;
    this.seenOverlong = this.splitter.overlongLines;
    const reason = `a line longer than ${this.splitter.maxLineBytes} bytes was skipped`;
    for (let i = 0; i < overlong; i++) out.push(this.count({ kind: "unreadable", reason }));
    return out;
  }

  private count(message: M | UnreadableLine): M | UnreadableLine {
    this.counts.lines++;
    if (message.kind === "unreadable") {
      this.counts.unreadable++;
      this.lastUnreadable = (message as UnreadableLine).reason;
    } else if (message.kind === "unknown") {
      this.counts.unknown++;
    }
    return message;
  }
}

/**
 * One dialect's parser class, for a `parser: (max) => new CodexStreamParser(max)` in its
 * dialect: a JsonLinesParser reading each line with `read`.
 */
export function jsonLinesParser<M extends { kind: string }>(
  read: (line: TypedLine) => M,
): new (maxLineBytes?: number) => JsonLinesParser<M> {
  return class extends JsonLinesParser<M> {
    constructor(maxLineBytes?: number) {
      super(read, maxLineBytes);
    }
  };
}
