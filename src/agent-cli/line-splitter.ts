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
