import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  killProcessesIn,
  parseStat,
  processesIn,
  ProcessTracker,
  readProcTable,
  type ProcEntry,
} from "../../src/process/process-tree.js";

const started: number[] = [];
afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
});

const p = (pid: number, ppid: number, pgid: number, sid: number, state = "S"): ProcEntry => ({
  pid,
  ppid,
  pgid,
  sid,
  start: `${pid}00`,
  state,
});

describe("parseStat", () => {
  it("reads a plain line", () => {
    const stat = "4242 (claude) S 4200 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 12 0 987654 0 0";
    expect(parseStat(stat)).toEqual({
      pid: 4242,
      ppid: 4200,
      pgid: 4242,
      sid: 4242,
      start: "987654",
      state: "S",
    });
  });

  it("reads a command name with spaces and parentheses", () => {
    const stat = "77 (a) b (c)) Z 1 70 70 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5555 0 0";
    expect(parseStat(stat)).toMatchObject({
      pid: 77,
      ppid: 1,
      pgid: 70,
      sid: 70,
      state: "Z",
      start: "5555",
    });
  });

  it("refuses garbage", () => {
    expect(parseStat("nonsense")).toBeUndefined();
  });

  it("this process is in the live table", () => {
    expect(readProcTable().some((e) => e.pid === process.pid)).toBe(true);
  });
});

describe("ProcessTracker on a synthetic table", () => {
  const self = p(process.pid, 1, 500, 500);
  // 100 = the CLI (own session). 101 = a tool shell in its own session (like Claude's Bash tool),
  // 102 its command. 103 = the CLI's helper in the CLI's group. 900 = unrelated.
  const running = [
    self,
    p(100, process.pid, 100, 100),
    p(101, 100, 101, 101),
    p(102, 101, 101, 101),
    p(103, 100, 100, 100),
    p(900, 1, 900, 900),
    p(901, process.pid, 500, 500), // the runner's own other child, in the runner's session
  ];

  it("finds the CLI and everything below it, whatever session they moved to", () => {
    let table = running;
    const tracker = new ProcessTracker(100, () => table);
    expect(
      tracker
        .sample()
        .map((e) => e.pid)
        .sort(),
    ).toEqual([100, 101, 102, 103]);
    // The CLI dies; its tool shell is re-parented to init but stays in its session.
    table = [self, p(101, 1, 101, 101), p(102, 101, 101, 101), p(900, 1, 900, 900)];
    expect(
      tracker
        .sample()
        .map((e) => e.pid)
        .sort(),
    ).toEqual([101, 102]);
  });

  it("a command that left for a new session while its parent lived is still the run's", () => {
    let table = [self, p(100, process.pid, 100, 100), p(101, 100, 101, 101)];
    const tracker = new ProcessTracker(100, () => table);
    tracker.sample();
    table = [self, p(100, process.pid, 100, 100), p(101, 100, 101, 101), p(110, 101, 110, 110)];
    tracker.sample();
    // Parent gone, 110 re-parented to init in its own session: remembered by identity and session.
    table = [self, p(110, 1, 110, 110)];
    expect(tracker.sample().map((e) => e.pid)).toEqual([110]);
  });

  it("never counts the runner itself, its session or its group", () => {
    const table = [self, p(100, process.pid, 500, 500), p(101, 100, 500, 500)];
    const tracker = new ProcessTracker(100, () => table);
    expect(tracker.sample()).toEqual([]);
  });

  it("ignores zombies (already dead)", () => {
    const table = [self, p(100, process.pid, 100, 100, "Z")];
    expect(new ProcessTracker(100, () => table).sample()).toEqual([]);
  });

  it("a reused pid with another start time is not the run's", () => {
    let table = [self, p(100, process.pid, 100, 100), p(101, 100, 101, 101)];
    const tracker = new ProcessTracker(100, () => table);
    tracker.sample();
    table = [self, { ...p(101, 1, 777, 777), start: "999999" }];
    expect(tracker.sample()).toEqual([]);
  });
});

describe("ProcessTracker on real processes", () => {
  it("kills a command that escaped into its own session, after its parent is gone", async () => {
    // Like the CLI's Bash tool: the command runs in a session of its own.
    const root = spawn("sh", ["-c", "setsid sleep 120 & sleep 120"], {
      detached: true,
      stdio: "ignore",
    });
    started.push(root.pid!);
    const tracker = new ProcessTracker(root.pid!);
    const deadline = Date.now() + 5000;
    let members: ProcEntry[] = [];
    while (Date.now() < deadline) {
      members = tracker.sample();
      // Wait for both commands to have exec'd, the first one into its own session.
      if (members.length === 3 && members.some((e) => e.sid !== root.pid)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(members.length).toBe(3); // sh, sleep, setsid'd sleep
    const escaped = members.find((e) => e.sid !== root.pid)!;
    expect(escaped).toBeDefined();

    // A group kill alone leaves the escaped command running.
    process.kill(-root.pid!, "SIGKILL");
    await new Promise((r) => setTimeout(r, 100));
    expect(readProcTable().some((e) => e.pid === escaped.pid && e.state !== "Z")).toBe(true);

    tracker.signal("SIGKILL");
    const gone = Date.now() + 5000;
    while (Date.now() < gone && tracker.sample().length > 0)
      await new Promise((r) => setTimeout(r, 20));
    expect(tracker.sample()).toEqual([]);
    expect(readProcTable().some((e) => e.pid === escaped.pid && e.state !== "Z")).toBe(false);
  });
});

describe("killProcessesIn", () => {
  it("ends what still works in a directory, in any session, and nothing else", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-strays-"));
    const other = fs.mkdtempSync(path.join(os.tmpdir(), "tether-other-"));
    fs.mkdirSync(path.join(dir, "sub"));
    try {
      const inDir = spawn("sleep", ["120"], { cwd: dir, detached: true, stdio: "ignore" });
      const inSub = spawn("sleep", ["120"], {
        cwd: path.join(dir, "sub"),
        detached: true, // a session of its own, like a command of the CLI's Bash tool
        stdio: "ignore",
      });
      const elsewhere = spawn("sleep", ["120"], { cwd: other, detached: true, stdio: "ignore" });
      started.push(inDir.pid!, inSub.pid!, elsewhere.pid!);
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline && processesIn(dir).length < 2)
        await new Promise((r) => setTimeout(r, 20));
      expect(
        processesIn(dir)
          .map((p) => p.pid)
          .sort(),
      ).toEqual([inDir.pid, inSub.pid].sort());

      const killed = await killProcessesIn(dir, 1000);
      expect(killed.sort()).toEqual([inDir.pid, inSub.pid].sort());
      expect(processesIn(dir)).toEqual([]);
      expect(processesIn(other).map((p) => p.pid)).toEqual([elsewhere.pid]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});
