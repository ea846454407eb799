/**
 * Gemini CLI's dialect (src/gemini/) on lines the pinned CLI (0.61.0) printed here
 * (docs/gemini-cli-facts.md): the stream parser, the outcome, the usage and its price, the
 * command line and the policy it writes, where a session file may be placed, and the proxy's
 * meter on Gemini's answers.
 */
import { describe, expect, it } from "vitest";
import type { ExitFacts } from "../../src/agent-cli/outcome.js";
import {
  buildGeminiArgs,
  geminiPolicy,
  geminiSettings,
  GIT_DIFF_NOTE,
} from "../../src/gemini/gemini-args.js";
import {
  classifyGemini,
  geminiEarlyStop,
  geminiUsage,
  newGeminiEvidence,
  observeGemini,
  type GeminiEvidence,
} from "../../src/gemini/gemini-outcome.js";
import { GeminiStreamParser, parseGeminiLine } from "../../src/gemini/gemini-stream.js";
import { estimateCostUsd, priceOf } from "../../src/providers/google/pricing.js";
import { ResponseMeter, type MeteredUsage } from "../../src/sandbox/model-meter.js";
import { geminiLayout } from "../../src/gemini/session-layout.js";

const ID = "2ed7ce82-d38d-4972-a031-2dc80325f9d3";
const LINES = {
  init: `{"type":"init","timestamp":"2026-11-27T17:48:33.368Z","session_id":"${ID}","model":"gemini-2.5-flash"}`,
  user: `{"type":"message","timestamp":"2026-11-27T17:48:33.369Z","role":"user","content":"hello there"}`,
  toolUse: `{"type":"tool_use","timestamp":"2026-11-27T17:48:33.446Z","tool_name":"write_file","tool_id":"write_file__write_file_1795801713397_0","parameters":{"file_path":"hello.txt","content":"hi from fake"}}`,
  toolResult: `{"type":"tool_result","timestamp":"2026-11-27T17:48:33.494Z","tool_id":"write_file__write_file_1795801713397_0","status":"success"}`,
  text1: `{"type":"message","timestamp":"2026-11-27T17:48:33.508Z","role":"assistant","content":"reply#2 c","delta":true}`,
  text2: `{"type":"message","timestamp":"2026-11-27T17:48:33.508Z","role":"assistant","content":"ontents=3","delta":true}`,
  result: `{"type":"result","timestamp":"2026-11-27T17:48:33.513Z","status":"success","stats":{"total_tokens":24541,"input_tokens":24515,"output_tokens":26,"cached":0,"input":24515,"duration_ms":145,"tool_calls":1,"models":{"gemini-2.5-flash":{"total_tokens":24541,"input_tokens":24515,"output_tokens":26,"cached":0,"input":24515}}}}`,
  overflow: `{"type":"result","timestamp":"2026-11-27T17:49:20.602Z","status":"error","error":{"type":"unknown","message":"[API Error: {\\"error\\":{\\"code\\":400,\\"message\\":\\"The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).\\",\\"status\\":\\"INVALID_ARGUMENT\\"}}]"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0,"models":{}}}`,
};

const exit = (over: Partial<ExitFacts> = {}): ExitFacts => ({
  exitCode: 0,
  signal: null,
  stderrTail: "",
  ...over,
});

function feed(lines: string[]): GeminiEvidence {
  const ev = newGeminiEvidence();
  const p = new GeminiStreamParser(1 << 20);
  for (const m of p.push(Buffer.from(lines.join("\n") + "\n"))) observeGemini(ev, m);
  return ev;
}

describe("Gemini stream and outcome", () => {
  it("reads a turn with a tool call: the session, the tool, the answer after it, success", () => {
    const ev = feed(Object.values(LINES).slice(0, 7));
    expect(ev.sessionId).toBe(ID);
    expect(ev.tools.size).toBe(1);
    expect(ev.text).toBe("reply#2 contents=3");
    expect(classifyGemini({ state: ev, exit: exit() })).toEqual({
      kind: "success",
      detail: "answered",
    });
  });

  it("counts what it cannot read and never throws", () => {
    const p = new GeminiStreamParser(1 << 20);
    const out = p.push(Buffer.from('not json\n{"no":"type"}\n{"type":"later-kind"}\n'));
    expect(out.map((m) => m.kind)).toEqual(["unreadable", "unreadable", "unknown"]);
    expect(p.counts).toMatchObject({ unreadable: 2, unknown: 1 });
    expect(parseGeminiLine('{"type":"init"}').kind).toBe("unreadable");
  });

  it("an overflow is poisoned; a rejected resume (exit 42, nothing on stdout) is resume_rejected", () => {
    const ev = feed([LINES.init, LINES.user, LINES.overflow]);
    expect(classifyGemini({ state: ev, exit: exit({ exitCode: 1 }) })).toMatchObject({
      kind: "poisoned",
      contextOverflow: true,
    });
    const rejected = classifyGemini({
      resumeSessionId: ID,
      state: newGeminiEvidence(),
      exit: exit({
        exitCode: 42,
        stderrTail: `Error resuming session: Invalid session identifier "${ID}".\n  Searched for sessions in /home/agent/.gemini/tmp/workspace/chats.`,
      }),
    });
    expect(rejected.kind).toBe("resume_rejected");
    expect(rejected.detail).toContain("Invalid session identifier");
  });

  it("a resume that reports another session is stopped at once", () => {
    const ev = newGeminiEvidence();
    const m = parseGeminiLine(LINES.init);
    observeGemini(ev, m);
    expect(geminiEarlyStop(m, ev, "11111111-2222-4333-8444-555555555555")?.reason).toBe(
      "resume_rejected",
    );
    expect(geminiEarlyStop(m, ev, ID)).toBeUndefined();
  });

  it("an invalid key is auth_failed and names the variable", () => {
    const ev = feed([
      LINES.init,
      `{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\\"error\\":{\\"code\\":400,\\"message\\":\\"API key not valid. Please pass a valid API key.\\",\\"status\\":\\"INVALID_ARGUMENT\\"}}]"}}`,
    ]);
    const c = classifyGemini({ state: ev, exit: exit({ exitCode: 1 }) });
    expect(c.kind).toBe("auth_failed");
    expect(c.detail).toContain("GEMINI_API_KEY");
  });

  it("prices each model's tokens at its own price; cached input at the cached price", () => {
    const ev = feed([
      LINES.init,
      `{"type":"result","status":"success","stats":{"input_tokens":1100000,"output_tokens":2000,"cached":500000,"models":{"gemini-2.5-pro":{"input_tokens":1000000,"output_tokens":1000,"cached":500000,"input":500000},"gemini-2.5-flash-lite":{"input_tokens":100000,"output_tokens":1000,"cached":0,"input":100000}}}}`,
    ]);
    const u = geminiUsage(ev, 1000);
    expect(u).toMatchObject({
      inputTokens: 600_000,
      cacheReadTokens: 500_000,
      outputTokens: 2000,
      model: "gemini-2.5-pro",
    });
    const pro = (500_000 * 1.25 + 500_000 * 0.125 + 1000 * 10) / 1e6;
    const lite = (100_000 * 0.1 + 1000 * 0.4) / 1e6;
    expect(u.costUsd).toBeCloseTo(pro + lite, 6);
    expect(priceOf("gemini-2.5-flash-lite-preview").input).toBe(0.1);
    expect(priceOf("some-new-model")).toEqual(priceOf("gemini-3-pro-preview"));
    expect(
      estimateCostUsd("gemini-2.5-flash", {
        inputTokens: 1e6,
        cacheReadTokens: 0,
        cacheCreationTokens: 0,
        outputTokens: 0,
      }),
    ).toBe(0.3);
  });
});

describe("Gemini command line, settings and policy", () => {
  const base = { timeoutMs: 1000, stallMs: 1000 };
  it("headless stream-json, the model every time, --resume with the id; Tether's instructions after the prompt", () => {
    expect(buildGeminiArgs({ ...base, model: "gemini-2.5-pro" }, ID)).toEqual([
      `--prompt=\n\n${GIT_DIFF_NOTE}`,
      "--output-format",
      "stream-json",
      "-m",
      "gemini-2.5-pro",
      "--resume",
      ID,
    ]);
    expect(buildGeminiArgs({ ...base, appendSystemPrompt: "-be brief" }, undefined)[0]).toBe(
      `--prompt=\n\n-be brief\n\n${GIT_DIFF_NOTE}`,
    );
  });

  it("the policy allows every tool, or only the allowed ones, and denies the disallowed above that; plan allows none", () => {
    expect(geminiPolicy(base)).toContain('toolName = "*"\ndecision = "allow"');
    // A shell command with a redirection is allowed too (the CLI would ask, refused headless).
    expect(geminiPolicy(base)).toContain("priority = 100\nallowRedirection = true");
    // Every shell command is allowed above the heuristics that would ask (git in an untrusted
    // folder, rm -rf), and the pattern passes the CLI's ReDoS check (no quantified group).
    const shellRule = 'toolName = "run_shell_command"\ncommandRegex = "[^\\\\x00]*"';
    expect(geminiPolicy(base)).toContain(shellRule);
    expect(geminiPolicy({ ...base, allowedTools: ["run_shell_command"] })).toContain(shellRule);
    expect(geminiPolicy({ ...base, allowedTools: ["read_file"] })).not.toContain("commandRegex");
    const p = geminiPolicy({
      ...base,
      allowedTools: ["read_file"],
      disallowedTools: ["run_shell_command"],
    });
    expect(p).not.toContain('"*"');
    expect(p).toContain('toolName = "read_file"\ndecision = "allow"\npriority = 100');
    expect(p).toContain('toolName = "run_shell_command"\ndecision = "deny"\npriority = 900');
    expect(geminiPolicy({ ...base, permissionMode: "plan" })).not.toContain("allow");
    expect(geminiSettings(base)).toMatchObject({
      security: { auth: { selectedType: "gemini-api-key" }, folderTrust: { enabled: false } },
      advanced: { ignoreLocalEnv: true },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
    });
  });

  it("a session file is placed only under a name of its session, with no path", () => {
    expect(
      geminiLayout.place("/h", "/workspace", ID, "session-2026-11-27T17-48-2ed7ce82.jsonl"),
    ).toBe("/h/.gemini/tmp/workspace/chats/session-2026-11-27T17-48-2ed7ce82.jsonl");
    for (const bad of [
      null,
      "session-2026-11-27T17-48-11111111.jsonl",
      "../session-2026-11-27T17-48-2ed7ce82.jsonl",
      "x/session-2026-11-27T17-48-2ed7ce82.jsonl",
      "2ed7ce82.jsonl",
    ])
      expect(() => geminiLayout.place("/h", "/workspace", ID, bad)).toThrow(/not a session file/);
    expect(() =>
      geminiLayout.place("/h", "/workspace", "../x", "session-1-2ed7ce82.jsonl"),
    ).toThrow();
  });
});

describe("the proxy's meter on Gemini's answers", () => {
  it("reads the last usageMetadata of a stream: cached out of the prompt, thoughts as output", () => {
    const seen: MeteredUsage[] = [];
    const m = new ResponseMeter("google", "text/event-stream", null, (u) => seen.push(u));
    const chunk = (v: unknown) => Buffer.from(`data: ${JSON.stringify(v)}\r\n\r\n`);
    m.push(
      chunk({
        candidates: [{ content: { parts: [{ text: "a" }] } }],
        modelVersion: "gemini-2.5-pro",
      }),
    );
    m.push(
      chunk({
        candidates: [],
        usageMetadata: {
          promptTokenCount: 1000,
          cachedContentTokenCount: 400,
          candidatesTokenCount: 50,
          thoughtsTokenCount: 25,
        },
        modelVersion: "gemini-2.5-pro",
      }),
    );
    m.end();
    expect(seen.at(-1)).toEqual({
      model: "gemini-2.5-pro",
      inputTokens: 600,
      cacheReadTokens: 400,
      outputTokens: 75,
      cacheCreationTokens: 0,
      webSearches: 0,
    });
  });
});
