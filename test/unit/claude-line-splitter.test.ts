import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LineSplitter } from "../../src/agent-cli/line-splitter.js";

const feed = (splitter: LineSplitter, chunks: Array<string | Buffer>): string[] => [
  ...chunks.flatMap((c) => splitter.push(Buffer.isBuffer(c) ? c : Buffer.from(c))),
  ...splitter.end(),
];

describe("LineSplitter", () => {
  const cases: Array<{ name: string; chunks: Array<string | Buffer>; lines: string[] }> = [
    { name: "one line per chunk", chunks: ["a\n", "b\n"], lines: ["a", "b"] },
    { name: "several lines in a chunk", chunks: ["a\nb\nc\n"], lines: ["a", "b", "c"] },
    { name: "a line across chunks", chunks: ['{"ty', 'pe":', "1}\n"], lines: ['{"type":1}'] },
    { name: "last line without newline", chunks: ["a\nb"], lines: ["a", "b"] },
    { name: "CRLF endings", chunks: ["a\r\nb\r\n"], lines: ["a", "b"] },
    { name: "blank lines skipped", chunks: ["\n\na\n  \n\r\nb\n"], lines: ["a", "b"] },
    { name: "empty stream", chunks: [], lines: [] },
    {
      name: "a UTF-8 character cut between chunks",
      chunks: [Buffer.from("é€😀\n").subarray(0, 3), Buffer.from("é€😀\n").subarray(3)],
      lines: ["é€😀"],
    },
  ];
  it.each(cases)("$name", ({ chunks, lines }) => {
    expect(feed(new LineSplitter(), chunks)).toEqual(lines);
  });

  it("gives the same lines however the bytes are cut", () => {
    const line = fc.stringMatching(/^[^\n\r]{1,40}$/).filter((s) => s.trim() !== "");
    fc.assert(
      fc.property(
        fc.array(line, { maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (lines, cuts) => {
          const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(""));
          const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort(
            (a, b) => a - b,
          );
          const chunks: Buffer[] = [];
          let prev = 0;
          for (const p of [...points, bytes.length]) {
            chunks.push(bytes.subarray(prev, p));
            prev = p;
          }
          expect(feed(new LineSplitter(), chunks)).toEqual(lines);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("skips a line longer than the limit and counts it, keeping the lines around it", () => {
    const splitter = new LineSplitter(10);
    const lines = feed(splitter, [
      "short\n",
      "x".repeat(6),
      "x".repeat(6),
      "x".repeat(6),
      "\nafter\n",
    ]);
    expect(lines).toEqual(["short", "after"]);
    expect(splitter.overlongLines).toBe(1);
  });

  it("keeps a line exactly at the limit", () => {
    const splitter = new LineSplitter(10);
    expect(feed(splitter, ["0123456789\n", "01234", "56789\n"])).toEqual([
      "0123456789",
      "0123456789",
    ]);
    expect(splitter.overlongLines).toBe(0);
  });

  it("counts an overlong last line that has no newline", () => {
    const splitter = new LineSplitter(4);
    expect(feed(splitter, ["ok\n", "toolong"])).toEqual(["ok"]);
    expect(splitter.overlongLines).toBe(1);
  });

  it("does not hold an overlong line in memory while it streams past", () => {
    const limit = 1024 * 1024;
    const splitter = new LineSplitter(limit);
    const chunk = Buffer.alloc(256 * 1024, 0x61); // one buffer, pushed again and again
    const before = process.memoryUsage().arrayBuffers;
    for (let i = 0; i < 256; i++) splitter.push(chunk); // 64 MiB of one line
    const grown = process.memoryUsage().arrayBuffers - before;
    expect(splitter.push(Buffer.from("\nnext\n"))).toEqual(["next"]);
    expect(splitter.overlongLines).toBe(1);
    // At most the copies made before the limit was passed.
    expect(grown).toBeLessThan(2 * limit + 512 * 1024);
  });

  it("delivers a 32 MiB line whole", () => {
    const size = 32 * 1024 * 1024 - 16;
    const splitter = new LineSplitter();
    const chunk = Buffer.alloc(1024 * 1024, 0x62);
    let got: string[] = [];
    for (let sent = 0; sent < size; sent += chunk.length) {
      got = got.concat(splitter.push(chunk.subarray(0, Math.min(chunk.length, size - sent))));
    }
    got = got.concat(splitter.push(Buffer.from("\n")));
    expect(got).toHaveLength(1);
    expect(got[0]!.length).toBe(size);
  });

  it("refuses a limit below one byte", () => {
    expect(() => new LineSplitter(0)).toThrow(RangeError);
  });
});
