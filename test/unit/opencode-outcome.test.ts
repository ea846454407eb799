/**
 * opencode's stream and outcome rules (src/opencode/), on lines shaped as the pinned CLI printed
 * them (docs/opencode-cli-facts.md). The real binary proves them end to end in
 * test/integration/opencode-adapter.test.ts; these pin each rule on its own.
 */
import { describe, expect, it } from "vitest";
import type { ExitFacts } from "../../src/agent-cli/outcome.js";
import {
  classifyOpencode,
  newOpencodeEvidence,
  observeOpencode,
  opencodeEarlyStop,
  opencodeToolName,
  opencodeUsage,
  type OpencodeEvidence,
} from "../../src/opencode/opencode-outcome.js";
import { opencodeMcpConfig } from "../../src/opencode/opencode-args.js";
import { OpencodeStreamParser, parseOpencodeLine } from "../../src/opencode/opencode-stream.js";

const S = "ses_de1dcac6bffeWSifWnl2v7mn5d";
const line = (o: Record<string, unknown>) => JSON.stringify({ timestamp: 1, sessionID: S, ...o });
const start = line({ type: "step_start", part: { type: "step-start" } });
const text = (t: string, sid = S) =>
  JSON.stringify({ type: "text", sessionID: sid, part: { type: "text", text: t } });
const finish = (reason: string, cost = 0.01) =>
  line({
    type: "step_finish",
    part: {
      type: "step-finish",
      reason,
      tokens: { total: 0, input: 10, output: 5, reasoning: 2, cache: { write: 100, read: 1000 } },
      cost,
    },
  });
const tool = (id: string, status = "completed", exit = 0) =>
  line({
    type: "tool_use",
    part: { type: "tool", tool: "bash", callID: id, state: { status, metadata: { exit } } },
  });
const error = (name: string, message: string, statusCode?: number) =>
  line({
    type: "error",
    error: { name, data: { message, ...(statusCode ? { statusCode } : {}) } },
  });

const EXIT_OK: ExitFacts = { exitCode: 0, signal: null, stderrTail: "" };
const EXIT_1: ExitFacts = { exitCode: 1, signal: null, stderrTail: "" };

function feed(lines: string[]): OpencodeEvidence {
  const ev = newOpencodeEvidence();
  for (const l of lines) observeOpencode(ev, parseOpencodeLine(l));
  return ev;
}

describe("opencode's stream", () => {
  it("reads each line, counts what it cannot, and splits lines across chunks", () => {
    const p = new OpencodeStreamParser(1 << 20);
    const all = `${start}\n${text("hi")}\nnot json\n{"type":"x"}\n${finish("stop")}\n`;
    const out = [
      ...p.push(Buffer.from(all.slice(0, 40))),
      ...p.push(Buffer.from(all.slice(40))),
      ...p.end(),
    ];
    expect(out.map((m) => m.kind)).toEqual([
      "step_start",
      "text",
      "unreadable",
      "unreadable",
      "step_finish",
    ]);
    expect(p.counts.unreadable).toBe(2);
  });

  it("the first line pins the session (whatever its type); a sub-agent's lines are not the turn's", () => {
    const ev = newOpencodeEvidence();
    ev.model = "claude-sonnet-4-5";
    const events = observeOpencode(
      ev,
      parseOpencodeLine(error("ContextOverflowError", "prompt is too long")),
    );
    expect(events[0]).toMatchObject({ type: "init", sessionId: S, model: "claude-sonnet-4-5" });
    expect(
      observeOpencode(ev, parseOpencodeLine(text("child", "ses_child0000000000000000000000"))),
    ).toEqual([]);
    expect(ev.lastText).toBeUndefined();
  });
});

describe("opencode's outcome", () => {
  it("a finished turn: success, its usage the sum of its steps, the CLI's cost", () => {
    const ev = feed([
      start,
      tool("t1"),
      finish("tool-calls"),
      start,
      text("ANSWER"),
      finish("stop"),
    ]);
    expect(classifyOpencode({ state: ev, exit: EXIT_OK })).toMatchObject({ kind: "success" });
    const u = opencodeUsage(ev, 1000);
    expect(u).toMatchObject({
      inputTokens: 20,
      outputTokens: 14,
      cacheReadTokens: 2000,
      cacheCreationTokens: 200,
      numTurns: 2,
      contextTokens: 1110,
    });
    expect(u.costUsd).toBeCloseTo(0.02, 10);
    expect(ev.tools.size).toBe(1);
  });

  it("no cost from the CLI (a model its list lacks): Tether's price table, the dearest for an unknown model", () => {
    const ev = feed([start, text("A"), finish("stop", 0)]);
    ev.model = "claude-sonnet-4-5";
    expect(opencodeUsage(ev, 1).costUsd).toBeCloseTo(
      (10 * 3 + 100 * 3.75 + 1000 * 0.3 + 7 * 15) / 1e6,
      12,
    );
    ev.model = "some-new-model";
    expect(opencodeUsage(ev, 1).costUsd).toBeGreaterThan(
      (10 * 3 + 100 * 3.75 + 1000 * 0.3 + 7 * 15) / 1e6,
    );
  });

  it("an overflow compacted away is a success (exit 1 and all); one that stays is poisoned", () => {
    const healed = feed([
      error("ContextOverflowError", "prompt is too long: 210000 tokens > 200000 maximum"),
      start,
      text("summary"),
      finish("stop"),
      start,
      text("AFTER"),
      finish("stop"),
    ]);
    expect(classifyOpencode({ state: healed, exit: EXIT_1 })).toMatchObject({ kind: "success" });
    expect(healed.compacted).toBe(true);
    const stuck = feed([
      error("ContextOverflowError", "prompt is too long"),
      error("ContextOverflowError", "prompt is too long"),
    ]);
    const c = classifyOpencode({ state: stuck, exit: EXIT_1 });
    expect(c).toMatchObject({ kind: "poisoned", contextOverflow: true });
    expect(c.detail).toMatch(/no longer fits the model's context/);
  });

  it("an error after the last step outranks it", () => {
    const ev = feed([start, text("partial"), finish("stop"), error("APIError", "Overloaded", 529)]);
    expect(classifyOpencode({ state: ev, exit: EXIT_1 })).toMatchObject({ kind: "failed" });
  });

  it("a turn that ended on tool calls did not finish", () => {
    const ev = feed([start, tool("t1"), finish("tool-calls")]);
    expect(classifyOpencode({ state: ev, exit: EXIT_OK }).kind).toBe("failed");
  });

  it("401 stops the run at once: auth_failed naming the key", () => {
    const ev = newOpencodeEvidence();
    const m = parseOpencodeLine(error("APIError", "invalid x-api-key", 401));
    observeOpencode(ev, m);
    const stop = opencodeEarlyStop(m, ev, undefined);
    expect(stop?.reason).toBe("auth_failed");
    expect(stop?.detail).toContain("ANTHROPIC_API_KEY");
  });

  it("a resume: 'Session not found' is a rejected resume; another session reported is stopped at once", () => {
    const none = classifyOpencode({
      resumeSessionId: S,
      state: newOpencodeEvidence(),
      exit: {
        exitCode: 1,
        signal: null,
        stderrTail: "\u001b[91m\u001b[1mError: \u001b[0mSession not found\n",
      },
    });
    expect(none.kind).toBe("resume_rejected");
    const ev = newOpencodeEvidence();
    const m = parseOpencodeLine(start.replace(S, "ses_other0000000000000000000000"));
    observeOpencode(ev, m);
    expect(opencodeEarlyStop(m, ev, S)?.reason).toBe("resume_rejected");
    expect(opencodeEarlyStop(parseOpencodeLine(start), feed([start]), S)).toBeUndefined();
  });

  it("a CLI that died before any line: failed, its words kept, ANSI codes gone", () => {
    const c = classifyOpencode({
      state: newOpencodeEvidence(),
      exit: {
        exitCode: 1,
        signal: null,
        stderrTail: "\u001b[91mError: \u001b[0mYou must provide a message\n",
      },
    });
    expect(c.kind).toBe("failed");
    expect(c.detail).toContain("You must provide a message");
    expect(c.detail).not.toContain("\u001b");
  });
});

describe("opencode and the operator's MCP servers (#39)", () => {
  it("a tool `<server>_<tool>` of a server the run was given is named mcp__<server>__<tool>; other tools keep their names", () => {
    const ev = { mcpServers: ["secretive", "remote"] };
    expect(opencodeToolName(ev, "secretive_whoami")).toBe("mcp__secretive__whoami");
    expect(opencodeToolName(ev, "remote_get_issue")).toBe("mcp__remote__get_issue");
    expect(opencodeToolName(ev, "bash")).toBe("bash");
    expect(opencodeToolName(ev, "other_tool")).toBe("other_tool");
    expect(opencodeToolName({ mcpServers: [] }, "secretive_whoami")).toBe("secretive_whoami");
  });

  it("the servers go in the config's `mcp` as opencode has them: local with a command array, remote with oauth off", () => {
    expect(
      opencodeMcpConfig([
        { name: "a", type: "stdio", command: "socat", args: ["-", "UNIX-CONNECT:/x"], env: {} },
        { name: "b", type: "stdio", command: "node", args: ["s.mjs"], env: { K: "v" } },
        { name: "c", type: "http", url: "http://10.0.0.1:1/mcp/c", headers: {} },
        { name: "d", type: "http", url: "https://d/mcp", headers: { Authorization: "x" } },
      ]),
    ).toEqual({
      a: { type: "local", command: ["socat", "-", "UNIX-CONNECT:/x"] },
      b: { type: "local", command: ["node", "s.mjs"], environment: { K: "v" } },
      c: { type: "remote", url: "http://10.0.0.1:1/mcp/c", oauth: false },
      d: { type: "remote", url: "https://d/mcp", headers: { Authorization: "x" }, oauth: false },
    });
  });
});
