/** The line-comment MCP server as the CLIs drive it: JSON-RPC lines in, JSON-RPC lines out. */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SERVER_SCRIPT } from "../../src/review/line-comment-tool.js";

/** A JSON-RPC answer, as loosely as the assertions read it. */
type Reply = {
  id: number | null;
  result: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  error: { code: number };
};

function talk(messages: unknown[], args: string[] = []): { replies: Reply[]; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lc-"));
  const file = path.join(dir, "c.jsonl");
  const input = messages.map((m) => (typeof m === "string" ? m : JSON.stringify(m))).join("\n");
  const out = execFileSync(process.execPath, [SERVER_SCRIPT, file, ...args], {
    input: input + "\n",
    encoding: "utf8",
  });
  return {
    replies: out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Reply),
    file,
  };
}
const call = (id: number, name: string, args: unknown) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args },
});

describe("line-comment MCP server", () => {
  it("initializes, lists its tool (always loaded), and records a comment", () => {
    const { replies, file } = talk([
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18" } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      call(3, "comment_on_line", { path: "./src/a.js", line: 4, start_line: 2, body: "hm" }),
    ]);
    expect(replies.map((r) => r.id)).toEqual([1, 2, 3]);
    expect(replies[0]!.result.protocolVersion).toBe("2025-06-18");
    expect(replies[1]!.result.tools.map((t: { name: string }) => t.name)).toEqual([
      "comment_on_line",
    ]);
    expect(replies[1]!.result.tools[0]._meta).toEqual({ "anthropic/alwaysLoad": true });
    expect(replies[2]!.result.isError).toBeUndefined();
    expect(fs.readFileSync(file, "utf8")).toBe(
      JSON.stringify({
        kind: "comment",
        path: "src/a.js",
        line: 4,
        side: "RIGHT",
        start_line: 2,
        body: "hm",
      }) + "\n",
    );
  });

  it("answers bad input with an error result, never a crash, and records nothing", () => {
    const { replies, file } = talk([
      "not json",
      call(1, "comment_on_line", { path: "a.js", line: "3", body: "x" }),
      call(2, "comment_on_line", { path: "/etc/passwd", line: 3, body: "x" }),
      call(3, "comment_on_line", { path: "a.js", line: 3, body: "" }),
      call(4, "comment_on_line", { path: "a.js", line: 3, body: "x", side: "UP" }),
      call(5, "comment_on_line", { path: "a.js", line: 3, start_line: 5, body: "x" }),
      call(6, "comment_on_line", null),
      call(7, "request_changes", { reason: "no" }),
      call(8, "approve", {}),
      { jsonrpc: "2.0", id: 9, method: "nope" },
    ]);
    expect(replies[0]!.error.code).toBe(-32700);
    for (const r of replies.slice(1, 9)) expect(r.result.isError).toBe(true);
    expect(replies[9]!.error.code).toBe(-32601);
    expect(fs.existsSync(file)).toBe(false);
  });

  it("caps the comments of a turn at 50", () => {
    const msgs = Array.from({ length: 52 }, (_, i) =>
      call(i + 1, "comment_on_line", { path: "a.js", line: i + 1, body: "x" }),
    );
    const { replies, file } = talk(msgs);
    expect(replies.filter((r) => r.result.isError)).toHaveLength(2);
    expect(fs.readFileSync(file, "utf8").trim().split("\n")).toHaveLength(50);
  });

  it("offers request_changes only when the agent's setting allows it", () => {
    const { replies, file } = talk(
      [
        { jsonrpc: "2.0", id: 1, method: "tools/list" },
        call(2, "request_changes", { reason: "tests fail" }),
      ],
      ["--request-changes"],
    );
    expect(replies[0]!.result.tools.map((t: { name: string }) => t.name)).toEqual([
      "comment_on_line",
      "request_changes",
    ]);
    expect(JSON.parse(fs.readFileSync(file, "utf8"))).toEqual({
      kind: "request_changes",
      reason: "tests fail",
    });
  });
});
