/**
 * The savings benchmark's per-turn figures and its checks (bench/savings-report.ts): the checks
 * are what make the benchmark fail when resuming stops saving, so each must trip on its case.
 */
import { describe, expect, it } from "vitest";
import type { RequestAccount } from "../../bench/savings-accounting.js";
import {
  figuresOf,
  keyTurns,
  renderReport,
  summarize,
  type TurnRecord,
} from "../../bench/savings-report.js";

function account(o: Partial<RequestAccount>): RequestAccount {
  const a: RequestAccount = {
    model: "m",
    blocks: 10,
    totalBytes: 100_000,
    readBytes: 0,
    readBlocks: 0,
    strictReadBytes: 0,
    uncachedBytes: 0,
    writeBytes: 0,
    newMessageBytes: 2_000,
    priorBytes: 98_000,
    billedBytes: 0,
    billedWithWritesBytes: 0,
    strictBilledBytes: 0,
    floorBytes: 98_000 * 0.1 + 2_000,
    ...o,
  };
  a.uncachedBytes = a.totalBytes - a.readBytes;
  a.billedBytes = a.readBytes * 0.1 + a.uncachedBytes;
  a.billedWithWritesBytes ||= a.billedBytes;
  a.strictBilledBytes ||= a.billedBytes;
  return a;
}

/** A ten-turn run that behaves: the resume arm resumes and reads all but the new message. */
function goodRun(): TurnRecord[] {
  const out: TurnRecord[] = [];
  for (let turn = 1; turn <= 10; turn++) {
    const first = turn === 1;
    const common = {
      turn,
      taskId: turn,
      status: "succeeded",
      commentBytes: 2_000,
      cliRuns: 1,
      apiRequests: 1,
      toolCalls: 0,
      needs: [],
      apiRequestBytes: 130_000,
      wallMs: 800,
      cliDurationMs: 500,
      fakeUsage: [],
    };
    out.push({
      ...common,
      arm: "resume",
      decision: first ? "fresh" : "resume",
      reason: first ? "no_prior_session" : "resumed",
      sessionId: "s-1",
      promptBytes: first ? 12_000 : 2_650,
      resumeFlag: !first,
      accounts: [account(first ? {} : { readBytes: 97_700 })],
      coldCacheAccounts: [account({})],
    });
    out.push({
      ...common,
      arm: "cold",
      decision: "fresh",
      reason: first ? "no_prior_session" : "resume_disabled",
      sessionId: `c-${turn}`,
      promptBytes: 12_000 + turn * 2_600,
      resumeFlag: false,
      accounts: [account(first ? {} : { readBytes: 80_000 })],
      coldCacheAccounts: [account({})],
    });
  }
  return out;
}

const meta = {
  options: {
    turns: 10,
    bodyBytes: 10_000,
    commentBytes: 2_000,
    replyBytes: 300,
    agent: "text" as const,
    fileBytes: 4_000,
    out: "x",
  },
  cliVersion: "2.1.197",
  model: "m",
  cliPrefixBytes: { toolsAndSystem: 109_000, reminders: 6_800 },
  systemStable: { resume: true, cold: true },
  machine: "test",
  benchSeconds: 1,
};
const failing = (records: TurnRecord[]) =>
  summarize(records, meta)
    .checks.filter((c) => !c.pass)
    .map((c) => c.name);

describe("savings report", () => {
  it("figures: tokens are bytes ÷ 4, read share of the cache-ordered bytes, billed over floor", () => {
    const f = figuresOf(goodRun()[2]!); // resume arm, turn 2
    expect(f.billedTokens).toBeCloseTo((97_700 * 0.1 + 2_300) / 4);
    expect(f.floorTokens).toBeCloseTo((98_000 * 0.1 + 2_000) / 4);
    expect(f.readShare).toBeCloseTo(0.977);
    expect(f.promptOverheadBytes).toBe(650);
    expect(f.billedOverFloor).toBeCloseTo((97_700 * 0.1 + 2_300) / (98_000 * 0.1 + 2_000));
  });

  it("a run that behaves passes every check, and the ratios compare the arms turn by turn", () => {
    const s = summarize(goodRun(), meta);
    expect(s.checks.filter((c) => !c.pass)).toEqual([]);
    expect(s.checks).toHaveLength(6);
    const r2 = s.ratios.find((r) => r.turn === 2)!;
    expect(r2.ratio).toBeCloseTo((97_700 * 0.1 + 2_300) / (80_000 * 0.1 + 20_000));
    expect(s.ratios[0]!.ratio).toBe(1);
    const report = renderReport(s);
    expect(report).toContain("turn 2: **");
    expect(report).toContain("turn 10: **");
    expect(report).not.toContain("FAIL");
    expect(report).toContain("median 0.80 s a turn");
  });

  const cases: Array<{ name: string; breakIt: (rs: TurnRecord[]) => void; fails: RegExp }> = [
    {
      name: "a follow-up that started fresh",
      breakIt: (rs) => Object.assign(rs[8]!, { decision: "fresh", reason: "expired" }),
      fails: /resume arm: turn 1 fresh/,
    },
    {
      name: "a resumed turn run without --resume",
      breakIt: (rs) => Object.assign(rs[8]!, { resumeFlag: false }),
      fails: /resume arm: turn 1 fresh/,
    },
    {
      name: "a new session mid-thread",
      breakIt: (rs) => Object.assign(rs[8]!, { sessionId: "s-2" }),
      fails: /one session/,
    },
    {
      name: "a cold turn that resumed",
      breakIt: (rs) => Object.assign(rs[9]!, { decision: "resume", reason: "resumed" }),
      fails: /cold arm/,
    },
    {
      name: "a turn with two requests",
      breakIt: (rs) => Object.assign(rs[4]!, { apiRequests: 2 }),
      fails: /one CLI run/,
    },
    {
      name: "a resumed prompt that re-sends the thread",
      breakIt: (rs) => Object.assign(rs[18]!, { promptBytes: 2_000 + 2_049 }),
      fails: /stay flat/,
    },
    {
      name: "a resumed turn that re-sends history uncached",
      breakIt: (rs) => Object.assign(rs[18]!, { accounts: [account({ readBytes: 90_000 })] }),
      fails: /within 10% of its floor/,
    },
  ];
  it.each(cases)("fails on $name", ({ breakIt, fails }) => {
    const rs = goodRun();
    breakIt(rs);
    const names = failing(rs);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(fails);
    expect(renderReport(summarize(rs, meta))).toContain("**FAIL**");
  });

  it("calls out turns 2, 5, 10, every tenth and the last", () => {
    expect(keyTurns(10)).toEqual([2, 5, 10]);
    expect(keyTurns(30)).toEqual([2, 5, 10, 20, 30]);
    expect(keyTurns(25)).toEqual([2, 5, 10, 20, 25]);
    expect(keyTurns(3)).toEqual([2, 3]);
  });
});
