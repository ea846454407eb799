/** escapeForTerminal (src/core/terminal-text.ts): what may act on an operator's terminal. */
import { describe, expect, it } from "vitest";
import { escapeForTerminal } from "../../src/core/terminal-text.js";

describe("escapeForTerminal", () => {
  it.each([
    { why: "plain text and JSON", text: '{"a":"b c"}', shown: '{"a":"b c"}' },
    { why: "line feeds and tabs stay", text: "a\tb\nc", shown: "a\tb\nc" },
    {
      why: "ESC sequences (colour, title, clipboard)",
      text: "\u001b]0;x\u0007",
      shown: "\\u001b]0;x\\u0007",
    },
    { why: "carriage return (overwrites the line)", text: "safe\rrm", shown: "safe\\u000drm" },
    { why: "NUL and backspace", text: "a\u0000\u0008", shown: "a\\u0000\\u0008" },
    { why: "DEL", text: "\u007f", shown: "\\u007f" },
    { why: "C1 CSI", text: "\u009b2J", shown: "\\u009b2J" },
    {
      why: "bidirectional overrides and isolates",
      text: "\u202eab\u2066c\u200f",
      shown: "\\u202eab\\u2066c\\u200f",
    },
    { why: "other Unicode stays", text: "naïve ✓ 日本", shown: "naïve ✓ 日本" },
  ])("$why", ({ text, shown }) => {
    expect(escapeForTerminal(text)).toBe(shown);
  });

  it("a JSON line stays JSON that reads the same", () => {
    const line = JSON.stringify({ text: "\u009b2J\u007f\u202e" });
    expect(JSON.parse(escapeForTerminal(line))).toEqual(JSON.parse(line));
  });
});
