import { describe, expect, it } from "vitest";
import {
  classifyExit,
  firstLine,
  resumedElsewhere,
  type Classification,
  type ExitFacts,
  type ExitReading,
} from "../../src/agent-cli/outcome.js";
import { initEvent, resultEvent } from "../../src/agent-cli/dialect-events.js";

/*
 * The ladder every CLI's outcome is judged by (classifyExit in src/agent-cli/outcome.ts), rung
 * by rung, with a dialect that fills every rung: each row has what the rung above it needs to
 * be passed, so a rung moved or lost makes a row fail.
 */

const exit = (over: Partial<ExitFacts> = {}): ExitFacts => ({
  exitCode: 1,
  signal: null,
  stderrTail: "",
  ...over,
});
const answer = {
  answered: true,
  classify: (): Classification => ({ kind: "success", detail: "answered" }),
};
const error = {
  answered: false,
  classify: (): Classification => ({ kind: "failed", detail: "it said no" }),
};

/** A dialect with every rule; each rule speaks only on its own cue in stderr. */
const full = (over: Partial<ExitReading> = {}): ExitReading => ({
  started: true,
  noResume: { pattern: /no such session/, detail: (stderr) => `gone: ${firstLine(stderr)}` },
  argumentError: /^error: unknown option/m,
  ended: ({ stderr }) =>
    stderr.includes("OWN") ? { kind: "poisoned", detail: "the dialect's own rule" } : undefined,
  lastly: ({ how, stderr }) =>
    stderr.includes("LAST") ? { kind: "auth_failed", detail: `last rule (${how})` } : undefined,
  ...over,
});

describe("classifyExit", () => {
  it("takes the highest rung whose cue is there; with that cue gone, the next one down", () => {
    // Every rung's cue at once, then taken away one at a time, top down.
    const facts = exit({
      spawnError: "spawn x ENOENT",
      stop: { reason: "no_start", detail: "quiet" },
    });
    facts.stderrTail = "no such session\nerror: unknown option --x\nOWN LAST";
    const cli = full({ resumeSessionId: "s-1", started: false, verdict: answer });
    const lifts: Array<() => void> = [
      () => delete facts.spawnError,
      () => (facts.stop = { reason: "auth_failed", detail: "401" }),
      () => (facts.stop = { reason: "resume_rejected", detail: "another session" }),
      // An answer stands though a stop raced it…
      () =>
        Object.assign(facts, {
          stop: { reason: "timed_out", detail: "late" },
          resultAfterStop: true,
        }),
      // …an error printed after the stop was asked for is the stop's doing…
      () => (cli.verdict = error),
      // …and one printed before it stands.
      () => (facts.resultAfterStop = false),
      () => (cli.verdict = undefined),
      () => delete facts.stop,
      () => (facts.stderrTail = facts.stderrTail.replace("no such session\n", "")),
      () => (facts.stderrTail = facts.stderrTail.replace("error: unknown option --x\n", "")),
      () => (facts.stderrTail = "LAST\nboom"),
      () => (cli.started = true),
      () => (facts.stderrTail = "a\nb\nc\nd\n"),
    ];
    const seen = [];
    for (const lift of [...lifts, () => undefined]) {
      const { kind, detail } = classifyExit(facts, cli);
      seen.push(`${kind}: ${detail}`);
      lift();
    }
    expect(seen).toEqual([
      "failed: spawn x ENOENT",
      "failed: quiet",
      "auth_failed: 401",
      "resume_rejected: another session",
      "success: answered",
      "timed_out: late",
      "failed: it said no",
      "timed_out: late",
      "resume_rejected: gone: no such session",
      "failed: the CLI refused its arguments (exited with code 1): error: unknown option --x",
      "poisoned: the dialect's own rule",
      "resume_rejected: the CLI exited with code 1 before resuming session s-1; stderr: LAST / boom",
      "auth_failed: last rule (exited with code 1)",
      "failed: the CLI exited with code 1 without ending the turn; stderr: b / c / d",
    ]);
  });

  it("stderr's words for a missing session count only on a resume", () => {
    const facts = exit({ stderrTail: "no such session" });
    expect(classifyExit(facts, full()).detail).toMatch(/without ending the turn; stderr: no such/);
    expect(classifyExit(facts, full({ resumeSessionId: "s" })).kind).toBe("resume_rejected");
  });

  it("says what the CLI did not do in the dialect's words", () => {
    const killed = exit({ signal: "SIGKILL", exitCode: null });
    const asThread = { resumeSessionId: "t-1", started: false, resuming: "resuming thread" };
    expect(classifyExit(killed, full(asThread)).detail).toBe(
      "the CLI was killed by SIGKILL before resuming thread t-1",
    );
    expect(classifyExit(exit({ exitCode: 0 }), full({ without: "a result line" })).detail).toBe(
      "the CLI exited with code 0 without a result line",
    );
  });

  it("a turn limit or a cancel with no last word is the stop's kind", () => {
    for (const reason of ["turn_limit", "cancelled", "stalled"] as const) {
      const facts = exit({ stop: { reason, detail: reason }, stderrTail: "no such session OWN" });
      expect(classifyExit(facts, full({ resumeSessionId: "s" }))).toEqual({
        kind: reason,
        detail: reason,
      });
    }
  });

  it("a dialect with no rules of its own gets the common rungs", () => {
    const bare: ExitReading = { started: false };
    expect(classifyExit(exit({ stderrTail: "error: unknown option" }), bare)).toEqual({
      kind: "failed",
      detail: "the CLI exited with code 1 without ending the turn; stderr: error: unknown option",
    });
    expect(classifyExit(exit({ exitCode: 0 }), { ...bare, resumeSessionId: "s" }).kind).toBe(
      "resume_rejected",
    );
  });
});

describe("resumedElsewhere", () => {
  it("stops a resume that names another session, in the CLI's word for it", () => {
    expect(resumedElsewhere("a", "b", "thread")).toEqual({
      reason: "resume_rejected",
      detail: "asked to resume thread a, but the CLI started thread b",
    });
    expect(resumedElsewhere("a", "a")).toBeUndefined();
    expect(resumedElsewhere(undefined, "b")).toBeUndefined();
    expect(resumedElsewhere("a", undefined)).toBeUndefined();
  });
});

describe("dialect events", () => {
  it("an init event says the session and the model, and nothing it was not told", () => {
    const event = initEvent("s", "m");
    expect(event).toMatchObject({ type: "init", sessionId: "s", model: "m", tools: [] });
    expect(Object.values(event).filter((v) => v === null)).toHaveLength(3);
  });

  it("a result event keeps the answer only when it answered", () => {
    expect(
      resultEvent({ ok: true, sessionId: "s", text: "hi", numTurns: 2, costUsd: 0.5 }),
    ).toEqual({
      type: "result",
      subtype: "success",
      isError: false,
      text: "hi",
      sessionId: "s",
      terminalReason: null,
      apiErrorStatus: null,
      numTurns: 2,
      costUsd: 0.5,
      errors: [],
    });
    expect(
      resultEvent({
        ok: false,
        sessionId: undefined,
        text: "partial",
        error: "no",
        apiErrorStatus: 429,
      }),
    ).toMatchObject({
      subtype: "error",
      isError: true,
      text: null,
      sessionId: null,
      apiErrorStatus: 429,
      errors: ["no"],
    });
  });
});
