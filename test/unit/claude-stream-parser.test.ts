import { describe, expect, it } from "vitest";
import {
  parseStreamLine,
  StreamParser,
  type StreamMessage,
} from "../../src/claude/stream-parser.js";
import { replayFixture } from "../helpers/fake-claude-replay.js";

describe("StreamParser on recorded CLI output", () => {
  const cases: Array<[string, string[]]> = [
    ["claude-code-2.1.197/fresh-turn.jsonl", ["init", "assistant", "result"]],
    ["claude-code-2.1.197/resumed-turn.jsonl", ["init", "assistant", "result"]],
    ["claude-code-2.1.197/resume-unknown-session.jsonl", ["result"]],
    ["claude-code-2.1.197/prompt-too-long.jsonl", ["init", "assistant", "result"]],
    [
      "claude-code-2.1.197/auth-failure-retrying-killed-at-60s.jsonl",
      ["init", ...Array<string>(9).fill("api_retry")],
    ],
    [
      "recorded-by-adapter/tool-use-turn.jsonl",
      ["init", "assistant", "user", "assistant", "result"],
    ],
    [
      "recorded-by-adapter/resume-compacted-after-prompt-too-long.jsonl",
      ["init", "unknown", "unknown", "compact_boundary", "user", "assistant", "result"],
    ],
    ["recorded-by-adapter/max-turns-reached.jsonl", ["init", "assistant", "user", "result"]],
    ["recorded-by-adapter/api-400-invalid-request.jsonl", ["init", "assistant", "result"]],
    ["recorded-by-adapter/api-403-forbidden.jsonl", ["init", "assistant", "result"]],
    ["recorded-by-adapter/resume-not-a-uuid.jsonl", ["result"]],
  ];
  it.each(cases)("%s reads as %j", (name, kinds) => {
    for (const chunkSize of [1, 97, 1 << 20]) {
      const { messages, parser } = replayFixture(name, chunkSize);
      expect(messages.map((m) => m.kind)).toEqual(kinds);
      expect(parser.counts.unreadable).toBe(0);
    }
  });

  it("keeps the fields the adapter reads", () => {
    const { messages } = replayFixture("claude-code-2.1.197/fresh-turn.jsonl");
    const [init, , result] = messages;
    expect(init).toMatchObject({
      kind: "init",
      line: { session_id: "d3526fa6-dfe2-405c-ad61-19274b86848a", model: "claude-sonnet-4-5" },
    });
    expect(result).toMatchObject({
      kind: "result",
      line: {
        subtype: "success",
        is_error: false,
        total_cost_usd: 0.000375,
        modelUsage: { "claude-sonnet-4-5": { contextWindow: 200000 } },
      },
    });
    // Fields nobody reads are accepted (and dropped), not an error.
    expect(init).not.toHaveProperty("line.slash_commands");
  });
});

describe("parseStreamLine on synthetic lines", () => {
  const init = { type: "system", subtype: "init", session_id: "s-1" };
  const rows: Array<{ name: string; line: string; kind: StreamMessage["kind"]; reason?: RegExp }> =
    [
      { name: "minimal init", line: JSON.stringify(init), kind: "init" },
      {
        name: "init with unknown fields",
        line: JSON.stringify({ ...init, brand_new_field: { deep: [1] }, model: "m" }),
        kind: "init",
      },
      {
        name: "init whose tool list is malformed still names the session",
        line: JSON.stringify({ ...init, tools: "Bash" }),
        kind: "init",
      },
      {
        name: "init without a session id",
        line: JSON.stringify({ type: "system", subtype: "init" }),
        kind: "unreadable",
        reason: /system\/init line: session_id/,
      },
      {
        name: "api_retry",
        line: JSON.stringify({
          type: "system",
          subtype: "api_retry",
          attempt: 1,
          error_status: 401,
        }),
        kind: "api_retry",
      },
      {
        name: "api_retry with a null status",
        line: JSON.stringify({
          type: "system",
          subtype: "api_retry",
          attempt: 1,
          error_status: null,
        }),
        kind: "api_retry",
      },
      {
        name: "unknown system subtype",
        line: JSON.stringify({ type: "system", subtype: "task_started", task_id: "x" }),
        kind: "unknown",
      },
      { name: "unknown type", line: '{"type":"stream_event","event":{}}', kind: "unknown" },
      {
        name: "a type that shadows Object.prototype",
        line: '{"type":"toString"}',
        kind: "unknown",
      },
      {
        name: "assistant with text and tool_use",
        line: JSON.stringify({
          type: "assistant",
          message: {
            content: [
              { type: "text", text: "hi" },
              { type: "tool_use", id: "t", name: "Bash", input: {} },
              { type: "thinking", thinking: "…" },
            ],
          },
        }),
        kind: "assistant",
      },
      {
        name: "assistant whose content is not a list",
        line: '{"type":"assistant","message":{"content":"text"}}',
        kind: "unreadable",
        reason: /assistant line: message\.content/,
      },
      {
        name: "user with a string prompt",
        line: '{"type":"user","message":{"content":"hello"}}',
        kind: "user",
      },
      {
        name: "result without is_error",
        line: '{"type":"result","subtype":"success"}',
        kind: "unreadable",
        reason: /result\/success line: is_error/,
      },
      {
        name: "result with a broken modelUsage keeps the rest",
        line: '{"type":"result","subtype":"success","is_error":false,"modelUsage":7}',
        kind: "result",
      },
      { name: "not JSON", line: "Error: something", kind: "unreadable", reason: /not JSON/ },
      {
        name: "cut off half-way",
        line: '{"type":"assistant","mess',
        kind: "unreadable",
        reason: /not JSON/,
      },
      { name: "a JSON array", line: "[1,2]", kind: "unreadable", reason: /not a JSON object/ },
      { name: "a JSON string", line: '"init"', kind: "unreadable", reason: /not a JSON object/ },
      { name: "null", line: "null", kind: "unreadable", reason: /not a JSON object/ },
      { name: "no type", line: '{"subtype":"init"}', kind: "unreadable", reason: /no "type"/ },
    ];
  it.each(rows)("$name → $kind", ({ line, kind, reason }) => {
    const message = parseStreamLine(line);
    expect(message.kind).toBe(kind);
    if (reason) expect((message as { reason: string }).reason).toMatch(reason);
  });
});

describe("StreamParser counting", () => {
  it("counts unreadable and unknown lines and reads on", () => {
    const parser = new StreamParser(64);
    const input = [
      '{"type":"system","subtype":"init","session_id":"s"}',
      "garbage",
      `{"type":"user","message":{"content":"${"x".repeat(100)}"}}`, // over the 64-byte limit
      '{"type":"mystery"}',
      '{"type":"result","subtype":"success","is_error":false}',
      '{"type":"result","sub', // a partial last line, no newline
    ].join("\n");
    const messages = [...parser.push(Buffer.from(input)), ...parser.end()];
    expect(messages.map((m) => m.kind)).toEqual([
      "init",
      "unreadable",
      "unknown",
      "result",
      "unreadable", // the overlong line, reported after its chunk's readable lines
      "unreadable", // the partial line
    ]);
    expect(parser.counts).toMatchObject({ lines: 6, unreadable: 3, unknown: 1 });
    expect(parser.lastUnreadable).toMatch(/not JSON/);
  });

  it("reads a huge tool result line (20 MB) whole", () => {
    const content = "y".repeat(20_000_000);
    const line = JSON.stringify({
      type: "user",
      message: { content: [{ type: "tool_result", tool_use_id: "t1", content }] },
    });
    const parser = new StreamParser();
    const bytes = Buffer.from(`${line}\n`);
    const messages: StreamMessage[] = [];
    for (let i = 0; i < bytes.length; i += 65536)
      messages.push(...parser.push(bytes.subarray(i, i + 65536)));
    expect(messages).toHaveLength(1);
    expect(messages[0]?.kind).toBe("user");
    expect(parser.counts.unreadable).toBe(0);
  });
});
