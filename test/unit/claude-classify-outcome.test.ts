import { describe, expect, it } from "vitest";
import { classifyOutcome, earlyStop } from "../../src/claude/classify-outcome.js";
import type { ExitFacts } from "../../src/agent-cli/outcome.js";
import { newEvidence, observe } from "../../src/claude/run-evidence.js";
import type { OutcomeKind } from "../../src/agent-cli/runtime-adapter.js";
import { evidenceOf, fixtureLines, replayFixture } from "../helpers/fake-claude-replay.js";

const FRESH_ID = "d3526fa6-dfe2-405c-ad61-19274b86848a";
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";
const exit = (over: Partial<ExitFacts> = {}): ExitFacts => ({
  exitCode: 0,
  signal: null,
  stderrTail: "",
  ...over,
});
const init = (sessionId = "s-1") => ({ type: "system", subtype: "init", session_id: sessionId });
const result = (over: Record<string, unknown> = {}) => ({
  type: "result",
  subtype: "success",
  is_error: false,
  num_turns: 1,
  result: "done",
  ...over,
});

interface Row {
  name: string;
  lines: Array<string | object>;
  resume?: string;
  exit?: Partial<ExitFacts>;
  kind: OutcomeKind;
  detail?: RegExp;
  /** The history is over the model's context window (what makes the runner retry `context_overflow`). */
  overflow?: boolean;
}

const fixture = (name: string) => fixtureLines(name);
const A = "claude-code-2.1.197";
const R = "recorded-by-adapter";

const rows: Row[] = [
  // Recorded runs.
  {
    name: "fresh turn",
    lines: fixture(`${A}/fresh-turn.jsonl`),
    kind: "success",
    detail: /1 turn$/,
  },
  {
    name: "resumed turn, same id",
    lines: fixture(`${A}/resumed-turn.jsonl`),
    resume: FRESH_ID,
    kind: "success",
  },
  // `/compact` as the prompt of a resumed run: a success either way; only compact_boundary
  // (run-evidence) tells a compaction from a refusal.
  {
    name: "/compact that compacted",
    lines: fixture(`${R}/compact-success.jsonl`),
    resume: "989986d2-0f52-4c8d-8522-7992a684be16",
    kind: "success",
  },
  {
    name: "/compact refused: not enough messages",
    lines: fixture(`${R}/compact-not-enough-messages.jsonl`),
    resume: "d38f1093-a5a7-4a1d-80e5-bb1fc7dd60aa",
    kind: "success",
  },
  {
    name: "/compact whose summary request failed",
    lines: fixture(`${R}/compact-failed-context-limit.jsonl`),
    resume: "d38f1093-a5a7-4a1d-80e5-bb1fc7dd60aa",
    kind: "success",
  },
  {
    name: "resumed turn, but the CLI ran another session",
    lines: fixture(`${A}/resumed-turn.jsonl`),
    resume: "aaaaaaaa-0000-4000-8000-000000000000",
    kind: "resume_rejected",
    detail: /but the CLI ran session d3526fa6/,
  },
  {
    name: "resume of an unknown session",
    lines: fixture(`${A}/resume-unknown-session.jsonl`),
    resume: UNKNOWN_ID,
    exit: { exitCode: 1, stderrTail: `No conversation found with session ID: ${UNKNOWN_ID}\n` },
    kind: "resume_rejected",
    detail: /no conversation 00000000/,
  },
  {
    name: "resume with an id the CLI does not take",
    lines: fixture(`${R}/resume-not-a-uuid.jsonl`),
    resume: "not-a-uuid",
    exit: { exitCode: 1 },
    kind: "resume_rejected",
    detail: /did not start resumed session not-a-uuid/,
  },
  {
    name: "prompt too long",
    lines: fixture(`${A}/prompt-too-long.jsonl`),
    exit: { exitCode: 1 },
    kind: "poisoned",
    detail: /prompt_too_long/,
    overflow: true,
  },
  {
    name: "prompt too long on a resume, compacted by the CLI and answered",
    lines: fixture(`${R}/resume-compacted-after-prompt-too-long.jsonl`),
    resume: "3a0c8a72-c602-4b9e-a62e-21f343a0861f",
    kind: "success",
  },
  {
    name: "API 400 invalid request",
    lines: fixture(`${R}/api-400-invalid-request.jsonl`),
    exit: { exitCode: 1 },
    kind: "poisoned",
    detail: /400 invalid_request_error.*unexpected tool_use_id/,
    overflow: false,
  },
  {
    name: "API 400 saying the prompt is too long: poisoned by an overflow",
    lines: [
      init(),
      result({
        is_error: true,
        api_error_status: 400,
        result: "prompt is too long: 210000 tokens > 200000 maximum",
      }),
    ],
    kind: "poisoned",
    overflow: true,
  },
  {
    name: "API 403 (the CLI does not retry it)",
    lines: fixture(`${R}/api-403-forbidden.jsonl`),
    exit: { exitCode: 1 },
    kind: "auth_failed",
    detail: /HTTP 403/,
  },
  {
    name: "401 retries, stopped by the adapter",
    lines: fixture(`${A}/auth-failure-retrying-killed-at-60s.jsonl`),
    exit: {
      exitCode: null,
      signal: "SIGTERM",
      stop: { reason: "auth_failed", detail: "refused (HTTP 401)" },
    },
    kind: "auth_failed",
  },
  {
    name: "401 retries, killed by someone else",
    lines: fixture(`${A}/auth-failure-retrying-killed-at-60s.jsonl`),
    exit: { exitCode: null, signal: "SIGKILL" },
    kind: "auth_failed",
    detail: /HTTP 401/,
  },
  {
    name: "turn limit reached",
    lines: fixture(`${R}/max-turns-reached.jsonl`),
    exit: { exitCode: 1 },
    kind: "failed",
    detail: /turn limit/,
  },
  {
    // --max-budget-usd 0.01: the first call's answer was complete, and it cost $0.108.
    name: "per-turn spend limit reached after an answer",
    lines: fixture(`${R}/max-budget-after-answer.jsonl`),
    exit: { exitCode: 1 },
    kind: "turn_limit",
    detail: /per-turn spend limit after spending \$0\.10\d+: Reached maximum budget \(\$0\.01\)/,
  },
  {
    // --max-budget-usd 0.112: the first tool ran; the second call asked for another, not run.
    name: "per-turn spend limit reached between tool calls",
    lines: fixture(`${R}/max-budget-before-tool.jsonl`),
    exit: { exitCode: 1 },
    kind: "turn_limit",
    detail: /after spending \$0\.117\d: Reached maximum budget \(\$0\.112\)/,
  },

  // Synthetic: what the stream cannot show by itself.
  {
    name: "no result line, clean exit",
    lines: [init()],
    kind: "failed",
    detail: /exited with code 0 without a result line/,
  },
  {
    name: "no result line, crash with stderr",
    lines: [init()],
    exit: { exitCode: 3, stderrTail: "trace line\nTypeError: boom\n" },
    kind: "failed",
    detail: /exited with code 3 without a result line; stderr: trace line \/ TypeError: boom/,
  },
  {
    name: "cancelled mid-run",
    lines: [init()],
    exit: { exitCode: 143, stop: { reason: "cancelled", detail: "cancelled: /cancel" } },
    kind: "cancelled",
    detail: /\/cancel/,
  },
  {
    name: "timed out",
    lines: [init()],
    exit: { signal: "SIGKILL", stop: { reason: "timed_out", detail: "wall clock" } },
    kind: "timed_out",
  },
  {
    name: "stalled",
    lines: [init()],
    exit: { exitCode: 143, stop: { reason: "stalled", detail: "silent" } },
    kind: "stalled",
  },
  {
    name: "a result that arrived before a cancel stands",
    lines: [init(), result()],
    exit: { stop: { reason: "cancelled", detail: "late" } },
    kind: "success",
  },
  {
    name: "a successful result that raced a cancel stands",
    lines: [init(), result()],
    exit: { stop: { reason: "cancelled", detail: "late" }, resultAfterStop: true },
    kind: "success",
  },
  {
    name: "an error result printed while being stopped is the stop's doing",
    lines: [
      init(),
      result({ subtype: "error_during_execution", is_error: true, errors: ["aborted"] }),
    ],
    exit: {
      exitCode: 143,
      stop: { reason: "timed_out", detail: "stopped at the wall-clock limit" },
      resultAfterStop: true,
    },
    kind: "timed_out",
  },
  {
    name: "an init for another session stops a resumed run",
    lines: [init("other")],
    resume: "asked",
    exit: { stop: { reason: "resume_rejected", detail: "asked to resume asked" } },
    kind: "resume_rejected",
  },
  {
    name: "resumed run ends before init",
    lines: [],
    resume: "asked",
    exit: { exitCode: 1 },
    kind: "resume_rejected",
    detail: /exited with code 1 before starting resumed session asked/,
  },
  {
    name: "resumed run refused its arguments (not the session's fault)",
    lines: [],
    resume: "asked",
    exit: { exitCode: 1, stderrTail: "error: unknown option '--frobnicate'\n" },
    kind: "failed",
    detail: /refused its arguments.*unknown option/,
  },
  {
    name: "bypassPermissions as root",
    lines: [],
    exit: {
      exitCode: 1,
      stderrTail:
        "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons\n",
    },
    kind: "failed",
    detail: /refused its arguments.*root\/sudo/,
  },
  {
    name: "could not spawn",
    lines: [],
    exit: { exitCode: null, spawnError: "could not start the Claude CLI at /nope: ENOENT" },
    kind: "failed",
    detail: /ENOENT/,
  },
  {
    name: "a 'No conversation' error on a fresh run is a plain failure",
    lines: [
      result({
        subtype: "error_during_execution",
        is_error: true,
        errors: ["No conversation found with session ID: x"],
      }),
    ],
    exit: { exitCode: 1 },
    kind: "failed",
  },
  {
    name: "result with is_error and no known cause",
    lines: [
      init(),
      result({ subtype: "error_during_execution", is_error: true, errors: ["disk full"] }),
    ],
    exit: { exitCode: 1 },
    kind: "failed",
    detail: /error_during_execution.*disk full/,
  },
  {
    name: "prompt_too_long outranks a 400 status",
    lines: [
      init(),
      result({ is_error: true, api_error_status: 400, terminal_reason: "prompt_too_long" }),
    ],
    kind: "poisoned",
    detail: /prompt_too_long/,
    overflow: true,
  },
  {
    name: "unreadable lines do not change a good run",
    lines: [init(), "garbage", '{"type":"whatever"}', result()],
    kind: "success",
  },
];

describe("classifyOutcome", () => {
  it.each(rows)("$name → $kind", ({ lines, resume, exit: facts, kind, detail, overflow }) => {
    const { evidence } = evidenceOf(lines);
    const got = classifyOutcome({
      ...(resume === undefined ? {} : { resumeSessionId: resume }),
      evidence,
      exit: exit(facts),
    });
    expect(got.kind).toBe(kind);
    if (detail) expect(got.detail).toMatch(detail);
    if (overflow !== undefined) expect(got.contextOverflow === true).toBe(overflow);
  });
});

describe("earlyStop", () => {
  it("stops at the first 401 retry, not after ten", () => {
    const { messages } = replayFixture(`${A}/auth-failure-retrying-killed-at-60s.jsonl`);
    const evidence = newEvidence();
    const stops = messages.map((m) => {
      observe(evidence, m);
      return earlyStop(m, evidence, undefined)?.reason;
    });
    expect(stops[0]).toBeUndefined(); // init
    expect(stops[1]).toBe("auth_failed"); // first api_retry with 401
  });

  it("does not stop for retries of other errors", () => {
    const evidence = newEvidence();
    const { messages } = replayFixture(`${A}/fresh-turn.jsonl`);
    const retry = {
      kind: "api_retry" as const,
      line: {
        type: "system" as const,
        subtype: "api_retry" as const,
        attempt: 1,
        error_status: 529,
        error: "overloaded",
      },
    };
    observe(evidence, retry);
    expect(earlyStop(retry, evidence, undefined)).toBeUndefined();
    for (const m of messages) {
      observe(evidence, m);
      expect(earlyStop(m, evidence, undefined)).toBeUndefined();
    }
  });

  const initTable: Array<[string | undefined, string, string | undefined]> = [
    [undefined, "new-id", undefined],
    [FRESH_ID, FRESH_ID, undefined],
    [FRESH_ID, "new-id", "resume_rejected"],
  ];
  it.each(initTable)("resume %s, init %s → %s", (asked, got, stop) => {
    const evidence = newEvidence();
    const message = {
      kind: "init" as const,
      line: { type: "system" as const, subtype: "init" as const, session_id: got },
    };
    observe(evidence, message);
    expect(earlyStop(message, evidence, asked)?.reason).toBe(stop);
  });
});
