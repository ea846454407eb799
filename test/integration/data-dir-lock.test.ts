import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  acquireDataDirLock,
  DataDirInUseError,
  processState,
  type LockOwner,
} from "../../src/db/data-dir-lock.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-lock-"));
const children: ChildProcess[] = [];
let n = 0;

afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  fs.rmSync(tmp, { recursive: true, force: true });
});

function freshDir(): string {
  return path.join(tmp, `d${++n}`, "postgres");
}

function lockOf(dir: string): string {
  return `${dir}.lock`;
}

function readLock(dir: string): LockOwner {
  return JSON.parse(fs.readFileSync(lockOf(dir), "utf8")) as LockOwner;
}

function writeLock(dir: string, text: string): void {
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  fs.writeFileSync(lockOf(dir), text);
}

function bootId(): string {
  return fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
}

/** A lock as another process would have written it. */
function ownerFor(pid: number, over: Partial<LockOwner> = {}): LockOwner {
  return {
    pid,
    startTime: processState(pid).startTime,
    bootId: bootId(),
    hostname: os.hostname(),
    startedAt: new Date().toISOString(),
    ...over,
  };
}

function sleeper(): ChildProcess & { pid: number } {
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], {
    stdio: "ignore",
  });
  children.push(child);
  if (child.pid === undefined) throw new Error("sleeper did not start");
  return child as ChildProcess & { pid: number };
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
}

async function deadPid(): Promise<number> {
  const child = sleeper();
  child.kill("SIGKILL");
  await exited(child);
  return child.pid;
}

function recordingLog() {
  const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
  return {
    warnings,
    log: {
      warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }),
      debug: () => {},
    } as never,
  };
}

describe("acquireDataDirLock", () => {
  it("takes a free directory, refuses it twice in one process, and gives it back on release", async () => {
    const dir = freshDir();
    const lock = await acquireDataDirLock(dir);
    expect(lock.file).toBe(lockOf(dir));
    const onDisk = readLock(dir);
    expect(onDisk.pid).toBe(process.pid);
    expect(onDisk.startTime).toBe(processState(process.pid).startTime);
    expect(onDisk.bootId).toBe(bootId());

    await lock.setPort(54321);
    expect(readLock(dir).port).toBe(54321);
    const again = await acquireDataDirLock(dir).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(DataDirInUseError);
    expect((again as Error).message).toContain("this process already runs");
    expect((again as Error).message).toContain("127.0.0.1:54321");

    await lock.release();
    expect(fs.existsSync(lockOf(dir))).toBe(false);
    await lock.release(); // idempotent
    const next = await acquireDataDirLock(dir);
    await next.release();
    expect(fs.readdirSync(path.dirname(dir))).toEqual([]); // no temp files left behind
  });

  it("refuses while a live process holds it, names that process and the ways out, and leaves its lock alone", async () => {
    const dir = freshDir();
    const owner = sleeper();
    const text = JSON.stringify(ownerFor(owner.pid, { port: 6543 }));
    writeLock(dir, text);
    const { log, warnings } = recordingLog();

    const err = await acquireDataDirLock(dir, { log }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataDirInUseError);
    const message = (err as Error).message;
    expect(message).toContain(`another Tether process (pid ${owner.pid}`);
    expect(message).toContain(dir);
    expect(message).toContain("DATABASE_URL");
    expect(message).toContain("127.0.0.1:6543");
    expect(message).toContain("TETHER_DATA_DIR");
    expect(fs.readFileSync(lockOf(dir), "utf8")).toBe(text);
    expect(warnings).toEqual([]);

    // The owner is killed: the next start takes over.
    owner.kill("SIGKILL");
    await exited(owner);
    const lock = await acquireDataDirLock(dir, { log });
    expect(readLock(dir).pid).toBe(process.pid);
    expect(warnings).toEqual([
      expect.objectContaining({
        obj: expect.objectContaining({ previousOwnerPid: owner.pid, reason: "owner_dead" }),
      }),
    ]);
    await lock.release();
  });

  it("takes over a lock whose pid now runs another process", async () => {
    const dir = freshDir();
    const other = sleeper();
    writeLock(dir, JSON.stringify(ownerFor(other.pid, { startTime: "1" })));
    const { log, warnings } = recordingLog();
    const lock = await acquireDataDirLock(dir, { log });
    expect(readLock(dir).pid).toBe(process.pid);
    expect(warnings[0]?.obj).toMatchObject({ reason: "pid_reused" });
    expect(other.exitCode).toBeNull(); // the lock is taken over, the process left alone
    await lock.release();
  });

  it("takes over a lock file that is not a lock (empty, garbage)", async () => {
    for (const text of ["", "not json\n", '{"pid":'])
      await (async () => {
        const dir = freshDir();
        writeLock(dir, text);
        const { log, warnings } = recordingLog();
        const lock = await acquireDataDirLock(dir, { log });
        expect(readLock(dir).pid).toBe(process.pid);
        expect(warnings[0]?.obj).toMatchObject({ reason: "unreadable" });
        await lock.release();
      })();
  });

  it("gets past a takeover guard left by a process that died while taking over", async () => {
    const dir = freshDir();
    const dead = await deadPid();
    writeLock(dir, JSON.stringify(ownerFor(dead, { startTime: "7" })));
    fs.writeFileSync(`${lockOf(dir)}.takeover`, JSON.stringify(ownerFor(dead, { startTime: "7" })));
    const lock = await acquireDataDirLock(dir);
    expect(readLock(dir).pid).toBe(process.pid);
    expect(fs.existsSync(`${lockOf(dir)}.takeover`)).toBe(false);
    await lock.release();
  });

  it("on release, leaves a lock that is no longer its own", async () => {
    const dir = freshDir();
    const lock = await acquireDataDirLock(dir);
    const other = JSON.stringify(ownerFor(process.ppid));
    fs.writeFileSync(lockOf(dir), other);
    await lock.release();
    expect(fs.readFileSync(lockOf(dir), "utf8")).toBe(other);
  });

  it("gives each directory to exactly one of several processes racing for it, free or stale", async () => {
    const dead = await deadPid();
    const dirs = Array.from({ length: 12 }, (_, i) => {
      const dir = freshDir();
      if (i % 3 === 1) writeLock(dir, JSON.stringify(ownerFor(dead, { startTime: "7" })));
      if (i % 3 === 2) writeLock(dir, "garbage");
      return dir;
    });
    const goAt = Date.now() + 4000;
    const contenders = Array.from({ length: 4 }, () => {
      const child = spawn(
        process.execPath,
        [
          "--import",
          "tsx",
          path.join(ROOT, "test/helpers/lock-contender.ts"),
          String(goAt),
          ...dirs,
        ],
        { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] },
      );
      children.push(child);
      let out = "";
      child.stdout?.on("data", (d) => (out += d));
      child.stderr?.on("data", (d) => (out += d));
      return { child, output: () => out };
    });
    const deadline = Date.now() + 20_000;
    while (contenders.some((c) => !c.output().includes("\n")) && Date.now() < deadline) {
      if (contenders.some((c) => c.child.exitCode !== null))
        throw new Error(contenders.map((c) => c.output()).join("\n"));
      await new Promise((r) => setTimeout(r, 50));
    }
    const results = contenders.map((c) => {
      const line = c.output().split("\n")[0] ?? "";
      return {
        pid: c.child.pid,
        outcomes: JSON.parse(line) as { dir: string; outcome: string; by?: number }[],
      };
    });
    for (const dir of dirs) {
      const winners = results.filter((r) =>
        r.outcomes.some((o) => o.dir === dir && o.outcome === "won"),
      );
      expect(winners, `winners of ${dir}`).toHaveLength(1);
      const winner = winners[0]!.pid;
      expect(readLock(dir).pid).toBe(winner);
      for (const r of results.filter((x) => x.pid !== winner))
        expect(r.outcomes.find((o) => o.dir === dir)).toEqual({
          dir,
          outcome: "refused",
          by: winner,
        });
    }
    for (const c of contenders) c.child.stdin?.end();
    await Promise.all(contenders.map((c) => exited(c.child)));
  }, 40_000);
});
