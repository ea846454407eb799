import { describe, expect, it } from "vitest";
import {
  DataDirInUseError,
  judgeLock,
  parseProcStat,
  type JudgeContext,
  type LockOwner,
  type LockVerdict,
  type ProcessState,
} from "../../src/db/data-dir-lock.js";

const BOOT = "01430fef-c0bb-467c-904c-cb7a2a9cd822";
const SELF = 4000;

function owner(over: Partial<LockOwner> = {}): LockOwner {
  return {
    pid: 1234,
    startTime: "1089926",
    bootId: BOOT,
    hostname: "box",
    startedAt: "2025-01-01T00:00:00.000Z",
    ...over,
  };
}

function ctx(processes: Record<number, ProcessState>, over: Partial<JudgeContext> = {}) {
  return {
    selfPid: SELF,
    bootId: BOOT,
    probe: (pid: number) => processes[pid] ?? { alive: false, startTime: null },
    ...over,
  } satisfies JudgeContext;
}

const live = { alive: true, startTime: "1089926" };

describe("judgeLock", () => {
  const rows: {
    name: string;
    text: string | undefined;
    processes?: Record<number, ProcessState>;
    context?: Partial<JudgeContext>;
    expected: LockVerdict["kind"];
    reason?: string;
  }[] = [
    { name: "no lock file", text: undefined, expected: "free" },
    {
      name: "live owner with the start time it recorded",
      text: JSON.stringify(owner()),
      processes: { 1234: live },
      expected: "held",
    },
    {
      name: "live owner that has recorded its port",
      text: JSON.stringify(owner({ port: 5433 })),
      processes: { 1234: live },
      expected: "held",
    },
    {
      name: "owner killed (no such pid)",
      text: JSON.stringify(owner()),
      expected: "stale",
      reason: "owner_dead",
    },
    {
      name: "owner killed, not yet reaped (zombie)",
      text: JSON.stringify(owner()),
      processes: { 1234: { alive: false, startTime: "1089926" } },
      expected: "stale",
      reason: "owner_dead",
    },
    {
      name: "pid reused by a process started at another time",
      text: JSON.stringify(owner()),
      processes: { 1234: { alive: true, startTime: "2000000" } },
      expected: "stale",
      reason: "pid_reused",
    },
    {
      name: "the lock names this process's pid (an earlier holder of the pid wrote it)",
      text: JSON.stringify(owner({ pid: SELF })),
      processes: { [SELF]: live },
      expected: "stale",
      reason: "pid_reused",
    },
    {
      name: "written before a reboot, pid and start time match by chance",
      text: JSON.stringify(owner({ bootId: "another-boot" })),
      processes: { 1234: live },
      expected: "stale",
      reason: "rebooted",
    },
    {
      name: "no boot id known here: judged by the pid",
      text: JSON.stringify(owner({ bootId: "another-boot" })),
      processes: { 1234: live },
      context: { bootId: null },
      expected: "held",
    },
    {
      name: "no /proc where the lock was written: a live pid is trusted",
      text: JSON.stringify(owner({ startTime: null, bootId: null })),
      processes: { 1234: { alive: true, startTime: null } },
      expected: "held",
    },
    {
      name: "no /proc here: a live pid is trusted",
      text: JSON.stringify(owner()),
      processes: { 1234: { alive: true, startTime: null } },
      expected: "held",
    },
    {
      name: "no /proc and the pid is gone",
      text: JSON.stringify(owner({ startTime: null, bootId: null })),
      expected: "stale",
      reason: "owner_dead",
    },
    { name: "empty file", text: "", expected: "stale", reason: "unreadable" },
    { name: "truncated JSON", text: '{"pid":12', expected: "stale", reason: "unreadable" },
    { name: "JSON null", text: "null", expected: "stale", reason: "unreadable" },
    { name: "a bare pid file", text: "1234\n", expected: "stale", reason: "unreadable" },
    {
      name: "pid not a number",
      text: JSON.stringify({ ...owner(), pid: "1234" }),
      processes: { 1234: live },
      expected: "stale",
      reason: "unreadable",
    },
    {
      name: "pid 0 (would signal our own process group)",
      text: JSON.stringify(owner({ pid: 0 })),
      processes: { 0: live },
      expected: "stale",
      reason: "unreadable",
    },
    {
      name: "fields missing",
      text: JSON.stringify({ pid: 1234 }),
      processes: { 1234: live },
      expected: "stale",
      reason: "unreadable",
    },
  ];

  it.each(rows)("$name → $expected", ({ text, processes, context, expected, reason }) => {
    const verdict = judgeLock(text, ctx(processes ?? {}, context));
    expect(verdict.kind).toBe(expected);
    if (verdict.kind === "stale") expect(verdict.reason).toBe(reason);
    if (verdict.kind === "held") expect(verdict.owner.pid).toBe(1234);
  });

  it("never probes a pid it cannot trust (unreadable file, own pid, other boot)", () => {
    const probed: number[] = [];
    const probe = (pid: number) => {
      probed.push(pid);
      return live;
    };
    judgeLock("garbage", ctx({}, { probe }));
    judgeLock(JSON.stringify(owner({ pid: SELF })), ctx({}, { probe }));
    judgeLock(JSON.stringify(owner({ bootId: "old" })), ctx({}, { probe }));
    expect(probed).toEqual([]);
  });
});

describe("parseProcStat", () => {
  // Real layout: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
  // cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime …
  const stat = (comm: string, state: string, start: string) =>
    `7068 (${comm}) ${state} 7066 7066 2370 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 ${start} 3133440 390`;

  it.each([
    { name: "running", text: stat("node", "R", "1089926"), alive: true, start: "1089926" },
    { name: "sleeping", text: stat("node", "S", "42"), alive: true, start: "42" },
    { name: "zombie", text: stat("node", "Z", "42"), alive: false, start: "42" },
    { name: "dead", text: stat("node", "X", "42"), alive: false, start: "42" },
    {
      name: "command name with spaces and parentheses",
      text: stat("a) R 1 (b", "S", "99"),
      alive: true,
      start: "99",
    },
    { name: "truncated", text: "7068 (node) S 1", alive: true, start: null },
    // The pid's entry exists: when in doubt, the owner is taken as alive (refuse, never steal).
    { name: "empty", text: "", alive: true, start: null },
    { name: "no command name", text: "7068 node S", alive: true, start: null },
  ])("$name", ({ text, alive, start }) => {
    expect(parseProcStat(text)).toEqual({ alive, startTime: start });
  });
});

describe("DataDirInUseError", () => {
  const dir = "/srv/tether/.data/postgres";
  const file = `${dir}.lock`;
  it.each([
    {
      port: 6543,
      passwordFile: `${dir}.password`,
      says: `(it listens on 127.0.0.1:6543; user tether, the password in ${dir}.password)`,
    },
    {
      port: undefined,
      passwordFile: `${dir}.password`,
      says: `(user tether, the password in ${dir}.password)`,
    },
    { port: 6543, passwordFile: undefined, says: "(it listens on 127.0.0.1:6543)" },
  ])("tells a second process how to reach the first one's database: $says", (row) => {
    const message = new DataDirInUseError(
      dir,
      file,
      owner({ port: row.port }),
      false,
      row.passwordFile,
    ).message;
    expect(message).toContain(`the running process's database ${row.says}, or give it`);
    expect(message).not.toMatch(/password `?tether`?/);
  });
});
