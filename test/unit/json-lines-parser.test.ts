import { describe, expect, it } from "vitest";
import {
  JsonLinesParser,
  jsonLinesParser,
  lineWithout,
  readJsonLine,
  type TypedLine,
} from "../../src/agent-cli/line-splitter.js";

/*
 * The JSON-lines kit every CLI's stream parser is made of (src/agent-cli/line-splitter.ts): the
 * framing, the preamble (JSON, an object, a string "type") and the counting are the kit's; what
 * a typed line means is the dialect's reader, here a small one.
 */

type Message =
  | { kind: "hello"; name: string }
  | { kind: "unknown"; type: string }
  | { kind: "unreadable"; reason: string };

function readTest(line: TypedLine): Message {
  if (line.type === "boom") throw new Error("the reader broke");
  if (line.type !== "hello") return { kind: "unknown", type: line.type };
  return typeof line.name === "string"
    ? { kind: "hello", name: line.name }
    : lineWithout(line, "name");
}

const TestParser = jsonLinesParser(readTest);

describe("readJsonLine", () => {
  const rows: Array<{ name: string; line: string; kind: string; reason?: RegExp }> = [
    { name: "a known line", line: '{"type":"hello","name":"a"}', kind: "hello" },
    { name: "a type the reader does not use", line: '{"type":"later"}', kind: "unknown" },
    { name: "not JSON", line: "Error: something", kind: "unreadable", reason: /^not JSON: "Error/ },
    { name: "cut off", line: '{"type":"hel', kind: "unreadable", reason: /^not JSON/ },
    { name: "an array", line: "[1]", kind: "unreadable", reason: /^not a JSON object/ },
    { name: "null", line: "null", kind: "unreadable", reason: /^not a JSON object/ },
    { name: "a number", line: "42", kind: "unreadable", reason: /^not a JSON object/ },
    { name: "no type", line: '{"name":"a"}', kind: "unreadable", reason: /^no "type"/ },
    { name: "a type not a string", line: '{"type":7}', kind: "unreadable", reason: /^no "type"/ },
    {
      name: "a known type without its field",
      line: '{"type":"hello"}',
      kind: "unreadable",
      reason: /^hello without name$/,
    },
    {
      name: "a reader that throws",
      line: '{"type":"boom"}',
      kind: "unreadable",
      reason: /^boom line: the reader broke$/,
    },
  ];
  it.each(rows)("$name → $kind", ({ line, kind, reason }) => {
    const message = readJsonLine(line, readTest);
    expect(message.kind).toBe(kind);
    if (reason) expect((message as { reason: string }).reason).toMatch(reason);
  });

  it("quotes a bad line's start, cut at 80 characters", () => {
    const message = readJsonLine(`x\u0007${"y".repeat(200)}`, readTest);
    expect(message).toEqual({
      kind: "unreadable",
      reason: `not JSON: ${JSON.stringify(`x\u0007${"y".repeat(78)}…`)}`,
    });
  });
});

describe("JsonLinesParser", () => {
  it("reads on past bad lines, and counts them", () => {
    const parser = new TestParser(1 << 20);
    const input = [
      '{"type":"hello","name":"a"}',
      "garbage",
      '{"type":"later"}',
      '{"type":"hello"}',
      '{"type":"hello","name":"b"}',
    ].join("\n");
    const out = [...parser.push(Buffer.from(`${input}\n`)), ...parser.end()];
    expect(out.map((m) => m.kind)).toEqual([
      "hello",
      "unreadable",
      "unknown",
      "unreadable",
      "hello",
    ]);
    expect(parser.counts).toEqual({ lines: 5, unreadable: 2, unknown: 1, bytes: input.length + 1 });
    expect(parser.lastUnreadable).toBe("hello without name");
  });

  it("joins a line cut across chunks, and reads a last line without a newline at the end", () => {
    const parser = new TestParser(1 << 20);
    const first = parser.push(Buffer.from('{"type":"hello","na'));
    const second = parser.push(Buffer.from('me":"a"}\n{"type":"hello","name":"b"}'));
    expect(first).toEqual([]);
    expect(second).toEqual([{ kind: "hello", name: "a" }]);
    expect(parser.end()).toEqual([{ kind: "hello", name: "b" }]);
  });

  it("a partial last line (the CLI killed mid-line) is unreadable, not lost", () => {
    const parser = new TestParser(1 << 20);
    expect(parser.push(Buffer.from('{"type":"hello","name":"a"}\n{"type":"hel'))).toHaveLength(1);
    expect(parser.end()).toEqual([
      { kind: "unreadable", reason: expect.stringMatching(/^not JSON/) },
    ]);
    expect(parser.counts).toMatchObject({ lines: 2, unreadable: 1 });
  });

  it("a line over the limit is one unreadable message, after its chunk's readable lines", () => {
    const parser = new JsonLinesParser(readTest, 32);
    const long = `{"type":"hello","name":"${"x".repeat(40)}"}`;
    const out = parser.push(Buffer.from(`${long}\n{"type":"hello","name":"b"}\n`));
    expect(out).toEqual([
      { kind: "hello", name: "b" },
      { kind: "unreadable", reason: "a line longer than 32 bytes was skipped" },
    ]);
    expect(parser.end()).toEqual([]);
    expect(parser.counts).toMatchObject({ lines: 2, unreadable: 1, unknown: 0 });
    expect(parser.lastUnreadable).toBe("a line longer than 32 bytes was skipped");
  });

  it("skips blank lines and takes \\r\\n endings", () => {
    const parser = new TestParser();
    const out = parser.push(Buffer.from('\n  \r\n{"type":"hello","name":"a"}\r\n\n'));
    expect(out).toEqual([{ kind: "hello", name: "a" }]);
    expect(parser.counts).toMatchObject({ lines: 1, unreadable: 0 });
  });
});
