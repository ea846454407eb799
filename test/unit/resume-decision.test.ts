import { describe, expect, it } from "vitest";
import {
  canReadTranscript,
  decideResume,
  describeReason,
  planRewind,
  REASON_CODES,
  type HistoryEdit,
  type PriorSession,
  type ResumeDecision,
  type ResumeInput,
  type RewindFacts,
  type SessionTurn,
} from "../../src/core/resume-decision.js";

const NOW = new Date("2026-11-22T12:00:00Z");
const HOUR = 3600_000;

const prior = (over: Partial<PriorSession> = {}): PriorSession => ({
  sessionId: "s-1",
  cli: "claude",
  runtimeId: "rt-a",
  workDir: "/ws/octo/widgets/issue-7/tether",
  state: "active",
  historyEpoch: 2,
  lastUsedAt: new Date(NOW.getTime() - HOUR),
  contextTokens: 50_000,
  contextWindow: 200_000,
  ...over,
});

const LOCAL = { where: "local" } as const;
const STORED = { where: "store", cliVersion: "2.1.197 (Claude Code)" } as const;

const input = (over: Partial<ResumeInput> = {}): ResumeInput => ({
  prior: prior(),
  forceFresh: false,
  policy: { enabled: true, ttlMs: 72 * HOUR, contextBudget: 0.8 },
  runtimeId: "rt-a",
  cli: "claude",
  workDir: "/ws/octo/widgets/issue-7/tether",
  workDirExists: true,
  historyEpoch: 2,
  cliCanResume: true,
  cliVersion: "2.1.197 (Claude Code)",
  now: NOW,
  ...over,
});

describe("decideResume", () => {
  const rows: Array<[string, Partial<ResumeInput>, string]> = [
    ["all guards hold", {}, "resumed"],
    ["no prior session", { prior: null }, "no_prior_session"],
    ["no prior session wins over /fresh", { prior: null, forceFresh: true }, "no_prior_session"],
    ["/fresh or a rerun", { forceFresh: true }, "forced_fresh"],
    [
      "config resume: false",
      { policy: { enabled: false, ttlMs: 72 * HOUR, contextBudget: 0.8 } },
      "resume_disabled",
    ],
    ["another runtime", { runtimeId: "rt-b" }, "runtime_mismatch"],
    ["a Claude session on a Codex agent", { cli: "codex" }, "runtime_mismatch"],
    [
      "a Codex thread on a Claude agent",
      { prior: prior({ cli: "codex" }), cli: "claude" },
      "runtime_mismatch",
    ],
    [
      "a Codex thread on a Codex agent",
      { prior: prior({ cli: "codex" }), cli: "codex" },
      "resumed",
    ],
    [
      "prior ran with no runtime recorded",
      { prior: prior({ runtimeId: null }) },
      "runtime_mismatch",
    ],
    ["another working directory", { workDir: "/ws/elsewhere" }, "workdir_changed"],
    ["working directory gone", { workDirExists: false }, "workdir_changed"],
    ["session poisoned", { prior: prior({ state: "poisoned" }) }, "poisoned"],
    ["session retired after a rejected resume", { prior: prior({ state: "retired" }) }, "poisoned"],
    ["history edited since pinning", { historyEpoch: 3 }, "history_edited"],
    [
      "idle longer than the TTL",
      { prior: prior({ lastUsedAt: new Date(NOW.getTime() - 73 * HOUR) }) },
      "expired",
    ],
    [
      "exactly at the TTL still resumes",
      { prior: prior({ lastUsedAt: new Date(NOW.getTime() - 72 * HOUR) }) },
      "resumed",
    ],
    ["context at the budget", { prior: prior({ contextTokens: 160_000 }) }, "context_budget"],
    ["context just under the budget", { prior: prior({ contextTokens: 159_999 }) }, "resumed"],
    [
      "unknown window uses 200k",
      { prior: prior({ contextTokens: 170_000, contextWindow: null }) },
      "context_budget",
    ],
    [
      "1M window leaves room",
      { prior: prior({ contextTokens: 170_000, contextWindow: 1_000_000 }) },
      "resumed",
    ],
    ["unknown context use does not block", { prior: prior({ contextTokens: null }) }, "resumed"],
    ["CLI without --resume", { cliCanResume: false }, "cli_cannot_resume"],
    // Sessions from before the shared store: only this runtime's disk has them.
    ["held on this runner's disk", { transcript: LOCAL }, "resumed"],
    ["held nowhere this runner can reach", { transcript: { where: "none" } }, "runtime_mismatch"],
    // Gone because collection pruned it (#28): past its time to live, or broken and past the
    // debugging window. The reason names the session's state, not the runtime.
    [
      "held nowhere, past its time to live",
      {
        transcript: { where: "none" },
        prior: prior({ lastUsedAt: new Date(NOW.getTime() - 73 * HOUR) }),
      },
      "expired",
    ],
    [
      "held nowhere, past its time to live, on another runtime",
      {
        transcript: { where: "none" },
        runtimeId: "rt-b",
        prior: prior({ lastUsedAt: new Date(NOW.getTime() - 2161 * HOUR) }),
      },
      "expired",
    ],
    [
      "held nowhere, within a long time to live (2160 h)",
      {
        transcript: { where: "none" },
        policy: { enabled: true, ttlMs: 2160 * HOUR, contextBudget: 0.8 },
        prior: prior({ lastUsedAt: new Date(NOW.getTime() - 169 * HOUR) }),
      },
      "runtime_mismatch",
    ],
    [
      "held nowhere, retired",
      { transcript: { where: "none" }, prior: prior({ state: "retired" }) },
      "poisoned",
    ],
    ["local on another runtime", { transcript: LOCAL, runtimeId: "rt-b" }, "runtime_mismatch"],
    // Portable sessions (the shared store holds them): the question is the CLI, not the host.
    ["stored, another runtime", { transcript: STORED, runtimeId: "rt-b" }, "resumed"],
    [
      "stored, another runtime's paths, workspace gone (re-prepared)",
      { transcript: STORED, runtimeId: "rt-b", workDir: "/other/ws", workDirExists: false },
      "resumed",
    ],
    [
      "stored, prior with no runtime recorded",
      { transcript: STORED, prior: prior({ runtimeId: null }) },
      "resumed",
    ],
    [
      "stored by an older CLI of the same major",
      { transcript: { where: "store", cliVersion: "2.0.5" }, runtimeId: "rt-b" },
      "resumed",
    ],
    [
      "stored by a newer CLI than this one",
      { transcript: { where: "store", cliVersion: "2.2.0" }, runtimeId: "rt-b" },
      "runtime_mismatch",
    ],
    [
      "stored by another major version",
      { transcript: { where: "store", cliVersion: "1.9.0" } },
      "runtime_mismatch",
    ],
    [
      "stored, this CLI's version unknown",
      { transcript: STORED, cliVersion: null },
      "runtime_mismatch",
    ],
    ["over the size bound", { transcript: { where: "over_bound" } }, "session_too_large"],
    [
      "over the size bound on another runtime",
      { transcript: { where: "over_bound" }, runtimeId: "rt-b" },
      "session_too_large",
    ],
    [
      "poison named before the size bound",
      { transcript: { where: "over_bound" }, prior: prior({ state: "poisoned" }) },
      "poisoned",
    ],
    [
      "stored still honours the TTL",
      { transcript: STORED, prior: prior({ lastUsedAt: new Date(0) }) },
      "expired",
    ],
    [
      "stored still honours an edited history",
      { transcript: STORED, historyEpoch: 3 },
      "history_edited",
    ],
    // Order matters: the first failing guard names the reason.
    [
      "runtime checked before poison",
      { runtimeId: "rt-b", prior: prior({ state: "poisoned" }) },
      "runtime_mismatch",
    ],
    [
      "poison checked before expiry",
      { prior: prior({ state: "poisoned", lastUsedAt: new Date(0) }) },
      "poisoned",
    ],
  ];

  it.each(rows)("%s → %s", (_name, over, reason) => {
    const d = decideResume(input(over));
    expect(d.reason).toBe(reason);
    if (reason === "resumed")
      expect(d).toEqual({ kind: "resume", sessionId: "s-1", reason: "resumed" });
    else expect(d.kind).toBe("fresh");
  });

  describe("a session over the context budget, with compaction on (resume.compact, a CLI that can)", () => {
    const COMPACT = { enabled: true, ttlMs: 72 * HOUR, contextBudget: 0.8, compact: true };
    const over = prior({ contextTokens: 160_000 });
    const compactRows: Array<[string, Partial<ResumeInput>, string]> = [
      ["at the budget: compacted, then resumed", { prior: over }, "compacted"],
      [
        "stored, on another runtime: compacted",
        { prior: over, transcript: STORED, runtimeId: "rt-b" },
        "compacted",
      ],
      [
        "unknown window uses 200k",
        { prior: prior({ contextTokens: 170_000, contextWindow: null }) },
        "compacted",
      ],
      [
        "under the budget: resumed as it is",
        { prior: prior({ contextTokens: 159_999 }) },
        "resumed",
      ],
      [
        "unknown context use: resumed as it is",
        { prior: prior({ contextTokens: null }) },
        "resumed",
      ],
      // Compacting is a resume of the session: every other guard still wins.
      ["/fresh", { prior: over, forceFresh: true }, "forced_fresh"],
      ["expired", { prior: prior({ contextTokens: 160_000, lastUsedAt: new Date(0) }) }, "expired"],
      ["poisoned", { prior: prior({ contextTokens: 160_000, state: "poisoned" }) }, "poisoned"],
      ["history edited", { prior: over, historyEpoch: 3 }, "history_edited"],
      ["another runtime, not stored", { prior: over, runtimeId: "rt-b" }, "runtime_mismatch"],
      [
        "over the size bound",
        { prior: over, transcript: { where: "over_bound" } },
        "session_too_large",
      ],
      [
        "resume disabled",
        { prior: over, policy: { ...COMPACT, enabled: false } },
        "resume_disabled",
      ],
      // A CLI that cannot resume cannot compact: the budget names the reason, as without compaction.
      ["CLI without --resume", { prior: over, cliCanResume: false }, "context_budget"],
    ];

    it.each(compactRows)("%s → %s", (_name, o, reason) => {
      const d = decideResume(input({ policy: COMPACT, ...o }));
      expect(d.reason).toBe(reason);
      if (reason === "compacted" || reason === "resumed")
        expect(d).toEqual({ kind: "resume", sessionId: "s-1", reason });
      else expect(d.kind).toBe("fresh");
    });

    it("compaction off (resume.compact: false, or a CLI that cannot): fresh, context_budget", () => {
      for (const policy of [
        { ...COMPACT, compact: false },
        { enabled: true, ttlMs: 72 * HOUR, contextBudget: 0.8 },
      ])
        expect(decideResume(input({ prior: over, policy }))).toEqual({
          kind: "fresh",
          reason: "context_budget",
          priorSessionId: "s-1",
        });
    });
  });

  describe("a comment the session read was edited or deleted: rewind, or fresh (history_edited)", () => {
    // The session's turns: t1 fresh (the thread, and comment:1), t2 asked in comment:2 and
    // comment:3 (coalesced), t3 in comment:4. The session was pinned at epoch 2; edits since.
    const turn = (taskId: number, over: Partial<SessionTurn> = {}): SessionTurn => ({
      taskId,
      entry: `m-${taskId}`,
      sources: [`comment:${taskId}`],
      compacted: false,
      rewoundFrom: null,
      ...over,
    });
    const TURNS = [
      turn(1, { entry: null }),
      turn(2, { sources: ["comment:2", "comment:3"] }),
      turn(3, { sources: ["comment:4"] }),
    ];
    const edit = (epoch: number, source: string | null, deleted = false): HistoryEdit => ({
      epoch,
      source,
      deleted,
    });
    const facts = (edits: HistoryEdit[], turns = TURNS): RewindFacts => ({ turns, edits });
    // [name, facts, the key's epoch now, plan, the session's epoch (default 2)]
    const rewindRows: Array<[string, RewindFacts, number, ReturnType<typeof planRewind>, number?]> =
      [
        [
          "an edit of the last turn's comment: back to before that turn, its text sent again",
          facts([edit(3, "comment:4")]),
          3,
          {
            at: "m-3",
            fromTaskId: 3,
            resend: ["comment:4"],
            changed: [{ source: "comment:4", deleted: false }],
          },
        ],
        [
          "an edit of an early comment: back to before its turn, it and what came after sent again",
          facts([edit(3, "comment:3")]),
          3,
          {
            at: "m-2",
            fromTaskId: 2,
            resend: ["comment:2", "comment:3", "comment:4"],
            changed: [{ source: "comment:3", deleted: false }],
          },
        ],
        [
          "a deletion: the deleted comment is not sent again",
          facts([edit(3, "comment:2", true)]),
          3,
          {
            at: "m-2",
            fromTaskId: 2,
            resend: ["comment:3", "comment:4"],
            changed: [{ source: "comment:2", deleted: true }],
          },
        ],
        [
          "two edits: back to before the earlier one",
          facts([edit(3, "comment:4"), edit(4, "comment:2")]),
          4,
          {
            at: "m-2",
            fromTaskId: 2,
            resend: ["comment:2", "comment:3", "comment:4"],
            changed: [
              { source: "comment:4", deleted: false },
              { source: "comment:2", deleted: false },
            ],
          },
        ],
        [
          "the first (fresh) turn's comment: nothing to go back to",
          facts([edit(3, "comment:1")]),
          3,
          null,
        ],
        [
          "a comment read in the thread only (no turn was asked in it)",
          facts([edit(3, "comment:99")]),
          3,
          null,
        ],
        ["the issue body (every turn read it)", facts([edit(3, null)]), 3, null],
        ["a bump with no record (from before rewinds)", facts([]), 3, null],
        ["one of two bumps without a record", facts([edit(4, "comment:4")]), 4, null],
        [
          "edits at or before the session's epoch do not count",
          facts([edit(2, "comment:1"), edit(3, "comment:4")]),
          3,
          {
            at: "m-3",
            fromTaskId: 3,
            resend: ["comment:4"],
            changed: [{ source: "comment:4", deleted: false }],
          },
        ],
        [
          "the turn has no entry recorded (from before rewinds)",
          facts(
            [edit(3, "comment:4")],
            [turn(1, { entry: null }), turn(2), turn(3, { entry: null })],
          ),
          3,
          null,
        ],
        [
          "a compaction after the rewind point: the history before it was too big",
          facts(
            [edit(3, "comment:2")],
            [turn(1, { entry: null }), turn(2), turn(3, { compacted: true })],
          ),
          3,
          null,
        ],
        [
          "the rewound-to turn itself compacted first: its entry is the summary's",
          facts([edit(3, "comment:2")], [turn(1, { entry: null }), turn(2, { compacted: true })]),
          3,
          {
            at: "m-2",
            fromTaskId: 2,
            resend: ["comment:2"],
            changed: [{ source: "comment:2", deleted: false }],
          },
        ],
        [
          "a turn after it that no comment started (a CI failure) cannot be sent again",
          facts(
            [edit(3, "comment:2")],
            [turn(1, { entry: null }), turn(2), turn(3, { sources: [] })],
          ),
          3,
          null,
        ],
        [
          "after a rewind, the branch: a re-sent comment is the rewound turn's",
          // t3 rewound past t2 (comment:2 and comment:3 sent again, and its own comment:5); now
          // comment:3 is edited again: back to t3's entry (which is t2's), all re-sent once more.
          facts(
            [edit(4, "comment:3")],
            [
              turn(1, { entry: null }),
              turn(2, { sources: ["comment:2", "comment:3"] }),
              turn(3, { entry: "m-2", sources: ["comment:5"], rewoundFrom: 2 }),
            ],
          ),
          4,
          {
            at: "m-2",
            fromTaskId: 3,
            resend: ["comment:2", "comment:3", "comment:5"],
            changed: [{ source: "comment:3", deleted: false }],
          },
          // The rewound turn moved the session's epoch on to 3.
          3,
        ],
        [
          "a rewound turn whose start is not in the session: unknown branch",
          facts(
            [edit(3, "comment:5")],
            [turn(1, { entry: null }), turn(3, { sources: ["comment:5"], rewoundFrom: 2 })],
          ),
          3,
          null,
        ],
      ];

    it.each(rewindRows)("planRewind: %s", (_name, f, toEpoch, plan, fromEpoch = 2) => {
      expect(planRewind(fromEpoch, toEpoch, f)).toEqual(plan);
    });

    const REWIND = { cliCanRewind: true, historyEpoch: 3, rewind: facts([edit(3, "comment:4")]) };
    const decideRows: Array<[string, Partial<ResumeInput>, string]> = [
      ["a CLI that rewinds, with a plan", REWIND, "rewound"],
      [
        "stored, on another runtime",
        { ...REWIND, transcript: STORED, runtimeId: "rt-b" },
        "rewound",
      ],
      ["a CLI that cannot rewind (Codex)", { ...REWIND, cliCanRewind: false }, "history_edited"],
      ["no facts read", { ...REWIND, rewind: undefined }, "history_edited"],
      ["no plan", { ...REWIND, rewind: facts([edit(3, "comment:1")]) }, "history_edited"],
      // Every other guard still holds.
      ["/fresh", { ...REWIND, forceFresh: true }, "forced_fresh"],
      ["poisoned", { ...REWIND, prior: prior({ state: "poisoned" }) }, "poisoned"],
      ["expired", { ...REWIND, prior: prior({ lastUsedAt: new Date(0) }) }, "expired"],
      [
        "over the budget: not compacted, fresh",
        { ...REWIND, prior: prior({ contextTokens: 160_000 }) },
        "history_edited",
      ],
      [
        "over the budget with compaction on: still fresh",
        {
          ...REWIND,
          prior: prior({ contextTokens: 160_000 }),
          policy: { enabled: true, ttlMs: 72 * HOUR, contextBudget: 0.8, compact: true },
        },
        "history_edited",
      ],
      ["CLI without --resume", { ...REWIND, cliCanResume: false }, "cli_cannot_resume"],
      // The epoch has not moved: no rewind, whatever the facts say.
      ["epoch unchanged", { ...REWIND, historyEpoch: 2 }, "resumed"],
    ];

    it.each(decideRows)("decideResume: %s → %s", (_name, over, reason) => {
      const d = decideResume(input(over));
      expect(d.reason).toBe(reason);
      if (reason === "rewound")
        expect(d).toEqual({
          kind: "resume",
          sessionId: "s-1",
          reason: "rewound",
          rewind: {
            at: "m-3",
            fromTaskId: 3,
            resend: ["comment:4"],
            changed: [{ source: "comment:4", deleted: false }],
          },
        });
      else if (reason !== "resumed") expect(d.kind).toBe("fresh");
    });
  });

  describe("/model on a model whose window is smaller than what the session holds", () => {
    const COMPACT = { enabled: true, ttlMs: 72 * HOUR, contextBudget: 0.8, compact: true };
    // The session holds 100k of its 200k window; budget 0.8.
    const held = prior({ contextTokens: 100_000 });
    const rows: Array<[string, Partial<ResumeInput>, ResumeDecision]> = [
      [
        "a 100k window: compacted first, and says why",
        { prior: held, policy: COMPACT, requestedWindow: 100_000 },
        { kind: "resume", sessionId: "s-1", reason: "compacted", smallerWindow: true },
      ],
      [
        "a 100k window, compaction off: fresh, and says why",
        { prior: held, requestedWindow: 100_000 },
        { kind: "fresh", reason: "context_budget", priorSessionId: "s-1", smallerWindow: true },
      ],
      [
        "a window the session still fits in (0.8 × 128k > 100k): resumed as it is",
        { prior: held, policy: COMPACT, requestedWindow: 128_000 },
        { kind: "resume", sessionId: "s-1", reason: "resumed" },
      ],
      [
        "a larger window: the session's own budget rules",
        { prior: held, policy: COMPACT, requestedWindow: 1_000_000 },
        { kind: "resume", sessionId: "s-1", reason: "resumed" },
      ],
      [
        "an unknown window: the session's own budget rules",
        { prior: held, policy: COMPACT, requestedWindow: null },
        { kind: "resume", sessionId: "s-1", reason: "resumed" },
      ],
      [
        "over its own budget too: compacted, not for the model",
        { prior: prior({ contextTokens: 170_000 }), policy: COMPACT, requestedWindow: 100_000 },
        { kind: "resume", sessionId: "s-1", reason: "compacted" },
      ],
      [
        "unknown context use: resumed as it is",
        { prior: prior({ contextTokens: null }), policy: COMPACT, requestedWindow: 1_000 },
        { kind: "resume", sessionId: "s-1", reason: "resumed" },
      ],
    ];
    it.each(rows)("%s", (_name, over, decision) => {
      expect(decideResume(input(over))).toEqual(decision);
    });
  });

  it("names the prior session on a fresh decision so the dashboard can link it", () => {
    expect(decideResume(input({ forceFresh: true }))).toEqual({
      kind: "fresh",
      reason: "forced_fresh",
      priorSessionId: "s-1",
    });
    expect(decideResume(input({ prior: null }))).toMatchObject({ priorSessionId: null });
  });

  it.each([
    ["2.1.197 (Claude Code)", "2.1.197 (Claude Code)", true],
    ["2.1.100", "2.1.197", true],
    ["2.1.197", "2.1.100", false],
    ["2.9.0", "2.10.0", true],
    ["2.1.197", "3.0.0", false],
    [null, "2.1.197", false],
    ["2.1.197", null, false],
    ["not a version", "2.1.197", false],
  ] as const)("canReadTranscript(%s, %s) → %s", (writer, reader, ok) => {
    expect(canReadTranscript(writer, reader)).toBe(ok);
  });

  it("has plain words for every reason code", () => {
    for (const code of REASON_CODES) expect(describeReason(code)).toMatch(/\w{4,}/);
  });
});
