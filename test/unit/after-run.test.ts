import { describe, expect, it } from "vitest";
import {
  afterCompaction,
  afterRun,
  NOT_RESUMABLE,
  type AfterCompaction,
  type AfterRun,
  type RunVerdict,
} from "../../src/core/after-run.js";
import type { ResumeDecision } from "../../src/core/resume-decision.js";
import { repoIdOf } from "../helpers/seed.js";

const RESUMED: ResumeDecision = { kind: "resume", sessionId: "s-1", reason: "resumed" };
const FORKED: ResumeDecision = {
  kind: "resume",
  sessionId: "s-9",
  reason: "forked",
  fork: true,
  forkFrom: {
    repoId: repoIdOf("octo/widgets"),
    repo: "octo/widgets",
    issueNumber: 7,
    agent: "other",
  },
};
const FRESH: ResumeDecision = { kind: "fresh", reason: "no_prior_session", priorSessionId: null };

const run = (over: Partial<RunVerdict>): RunVerdict => ({
  outcome: "success",
  toolRan: false,
  detail: null,
  ...over,
});
const retired = (sessionId: string) => ({
  sessionId,
  state: "retired" as const,
  why: NOT_RESUMABLE,
});
const retry = (reason: string, prior: string, mark: unknown): AfterRun =>
  ({
    kind: "retry_fresh",
    decision: { kind: "fresh", reason, priorSessionId: prior },
    mark,
  }) as AfterRun;
const DONE: AfterRun = { kind: "done", mark: null };

describe("afterRun", () => {
  const rows: Array<[string, ResumeDecision, RunVerdict, boolean, AfterRun]> = [
    ["a resumed run that succeeded", RESUMED, run({}), false, DONE],
    ["a fresh run, whatever it did", FRESH, run({ outcome: "resume_rejected" }), false, DONE],
    ["a fresh run poisoned", FRESH, run({ outcome: "poisoned", detail: "x" }), false, DONE],
    [
      "resume rejected before any tool: retired, retried fresh",
      RESUMED,
      run({ outcome: "resume_rejected" }),
      false,
      retry("resume_rejected", "s-1", retired("s-1")),
    ],
    [
      "resume rejected after a tool ran: retired, not retried",
      RESUMED,
      run({ outcome: "resume_rejected", toolRan: true }),
      false,
      { kind: "done", mark: retired("s-1") },
    ],
    [
      "resume rejected while stopping: retired, not retried",
      RESUMED,
      run({ outcome: "resume_rejected" }),
      true,
      { kind: "done", mark: retired("s-1") },
    ],
    [
      "a fork rejected: its source stays as it was, the turn retries fresh",
      FORKED,
      run({ outcome: "resume_rejected" }),
      false,
      retry("resume_rejected", "s-9", null),
    ],
    [
      "poisoned by an overflow before any tool: retried fresh as context_overflow",
      RESUMED,
      run({ outcome: "poisoned", contextOverflow: true, detail: "too long" }),
      false,
      retry("context_overflow", "s-1", { sessionId: "s-1", state: "poisoned", why: "too long" }),
    ],
    [
      "poisoned otherwise before any tool: retried fresh as poisoned",
      RESUMED,
      run({ outcome: "poisoned", detail: "400 invalid_request_error" }),
      false,
      retry("poisoned", "s-1", {
        sessionId: "s-1",
        state: "poisoned",
        why: "400 invalid_request_error",
      }),
    ],
    [
      "poisoned without a detail",
      RESUMED,
      run({ outcome: "poisoned" }),
      false,
      retry("poisoned", "s-1", { sessionId: "s-1", state: "poisoned", why: "poisoned" }),
    ],
    [
      "a fork poisoned: retried fresh, its source not marked",
      FORKED,
      run({ outcome: "poisoned", contextOverflow: true }),
      false,
      retry("context_overflow", "s-9", null),
    ],
    [
      "poisoned after a tool ran: the turn's result (the record marks it)",
      RESUMED,
      run({ outcome: "poisoned", toolRan: true }),
      false,
      DONE,
    ],
    ["poisoned while stopping", RESUMED, run({ outcome: "poisoned" }), true, DONE],
    ["a resumed run that failed otherwise", RESUMED, run({ outcome: "failed" }), false, DONE],
    ["a resumed run that timed out", RESUMED, run({ outcome: "timed_out" }), false, DONE],
    ["a resumed run cancelled", RESUMED, run({ outcome: "cancelled" }), true, DONE],
  ];
  it.each(rows)("%s", (_name, decision, verdict, stopped, want) => {
    expect(afterRun(decision, verdict, stopped)).toEqual(want);
  });
});

describe("afterCompaction", () => {
  const rows: Array<
    [string, { outcome: RunVerdict["outcome"]; compacted: boolean }, boolean, AfterCompaction]
  > = [
    [
      "compacted: resume the summary",
      { outcome: "success", compacted: true },
      false,
      { kind: "resume" },
    ],
    [
      "stopped while compacting",
      { outcome: "cancelled", compacted: false },
      true,
      { kind: "stopped" },
    ],
    [
      "stopped even after it compacted",
      { outcome: "success", compacted: true },
      true,
      { kind: "stopped" },
    ],
    [
      "success without compact_boundary: fresh, compaction_failed",
      { outcome: "success", compacted: false },
      false,
      {
        kind: "fresh",
        decision: { kind: "fresh", reason: "compaction_failed", priorSessionId: "s-1" },
        mark: null,
      },
    ],
    [
      "the compaction failed: fresh, compaction_failed",
      { outcome: "failed", compacted: false },
      false,
      {
        kind: "fresh",
        decision: { kind: "fresh", reason: "compaction_failed", priorSessionId: "s-1" },
        mark: null,
      },
    ],
    [
      "the CLI could not resume it to compact: retired, fresh, resume_rejected",
      { outcome: "resume_rejected", compacted: false },
      false,
      {
        kind: "fresh",
        decision: { kind: "fresh", reason: "resume_rejected", priorSessionId: "s-1" },
        mark: retired("s-1"),
      },
    ],
  ];
  it.each(rows)("%s", (_name, c, stopped, want) => {
    expect(afterCompaction("s-1", c, stopped)).toEqual(want);
  });
});
