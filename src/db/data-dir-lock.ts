import { existsSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { Logger } from "../log.js";

/**
 * One process per embedded database directory.
 *
 * The embedded PostgreSQL recovery (clearStaleServer) stops any server that postmaster.pid
 * names, because after a SIGKILL that server is an orphan. It cannot tell an orphan from the
 * server of a second, live Tether process on the same directory: this lock can. Node has no
 * flock(), so the lock is a file created atomically (link(2) of a fully written temp file, which
 * fails with EEXIST) that names its owner by pid, the pid's start time in /proc (pids are reused)
 * and the boot id (a reboot ends every owner). A lock whose owner is gone is taken over.
 */

/** Who holds a data directory; the lock file's JSON. */
export const LockOwner = z.object({
  /** Process id of the owner. */
  pid: z.number().int().positive(),
  /** Field 22 of /proc/<pid>/stat (clock ticks after boot); null where there is no /proc. */
  startTime: z.string().nullable(),
  /** /proc/sys/kernel/random/boot_id when the lock was taken; null where there is none. */
  bootId: z.string().nullable(),
  /** Host name of the owner, for messages only. */
  hostname: z.string(),
  /** When the lock was taken (ISO 8601), for messages only. */
  startedAt: z.string(),
  /** Port of the owner's embedded PostgreSQL once it listens, so a refusal can point at it. */
  port: z.number().int().positive().optional(),
});
export type LockOwner = z.infer<typeof LockOwner>;

/** What the system says about a pid now. */
export interface ProcessState {
  /** Running (a zombie is not). */
  alive: boolean;
  /** Same meaning as LockOwner.startTime; null when unknown. */
  startTime: string | null;
}

export type StaleReason =
  /** No process has the owner's pid. */
  | "owner_dead"
  /** The pid runs another process now (or it is ours: we are not the owner). */
  | "pid_reused"
  /** The machine rebooted since the lock was taken. */
  | "rebooted"
  /** The file is not a lock this code wrote (empty, truncated by a full disk, edited). */
  | "unreadable";

export type LockVerdict =
  | { kind: "free" }
  | { kind: "held"; owner: LockOwner }
  | { kind: "stale"; reason: StaleReason; owner?: LockOwner };

export interface JudgeContext {
  /** This process (a lock naming our pid was left by an earlier holder of that pid). */
  selfPid: number;
  /** This boot's id, or null when unknown. */
  bootId: string | null;
  probe: (pid: number) => ProcessState;
}

/** Decide whether the lock file's text (undefined: no file) still belongs to a live owner. */
export function judgeLock(text: string | undefined, ctx: JudgeContext): LockVerdict {
  if (text === undefined) return { kind: "free" };
  const owner = parseOwner(text);
  if (!owner) return { kind: "stale", reason: "unreadable" };
  // A process holds one lock per directory (acquire refuses a second before reading the
  // file), so a file naming our pid was written by a dead process that had it before.
  if (owner.pid === ctx.selfPid) return { kind: "stale", reason: "pid_reused", owner };
  if (owner.bootId !== null && ctx.bootId !== null && owner.bootId !== ctx.bootId)
    return { kind: "stale", reason: "rebooted", owner };
  const state = ctx.probe(owner.pid);
  if (!state.alive) return { kind: "stale", reason: "owner_dead", owner };
  // Without start times on both sides (no /proc) a live pid has to be trusted.
  if (owner.startTime !== null && state.startTime !== null && owner.startTime !== state.startTime)
    return { kind: "stale", reason: "pid_reused", owner };
  return { kind: "held", owner };
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const parsed = LockOwner.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

const HAS_PROC = existsSync("/proc/self/stat");

/** Read a pid's state from /proc (Linux), or fall back to signal 0 (no start time). */
export function processState(pid: number): ProcessState {
  if (HAS_PROC) {
    try {
      return parseProcStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
    } catch {
      return { alive: false, startTime: null };
    }
  }
  try {
    process.kill(pid, 0);
    return { alive: true, startTime: null };
  } catch (e) {
    return { alive: (e as NodeJS.ErrnoException).code === "EPERM", startTime: null };
  }
}

/**
 * /proc/<pid>/stat → state. A zombie (killed, not yet reaped) holds nothing any more. The file
 * exists, so the pid does: text that cannot be read is taken as alive (refusing to start is
 * the safe mistake; taking over a live owner's directory is not).
 */
export function parseProcStat(stat: string): ProcessState {
  // The command name (field 2) is in parentheses and may itself hold spaces and ')'.
  const close = stat.lastIndexOf(")");
  if (close < 0) return { alive: true, startTime: null };
  const fields = stat.slice(close + 2).split(" ");
  const state = fields[0]; // field 3
  const startTime = fields[19]; // field 22
  return {
    alive: state !== "Z" && state !== "X" && state !== "x",
    startTime: startTime && /^\d+$/.test(startTime) ? startTime : null,
  };
}

function readBootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
  } catch {
    return null;
  }
}

/** The second process on a data directory: says who has it and what to do instead. */
export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly lockFile: string,
    readonly owner: LockOwner,
    readonly byThisProcess = false,
    readonly passwordFile?: string,
  ) {
    const who = byThisProcess
      ? "this process already runs"
      : `another Tether process (pid ${owner.pid} on ${owner.hostname}, since ${owner.startedAt}) runs`;
    const at = owner.port ? `127.0.0.1:${owner.port}` : "";
    const login = passwordFile ? `user tether, the password in ${passwordFile}` : "";
    const where =
      at || login ? ` (${[at && `it listens on ${at}`, login].filter(Boolean).join("; ")})` : "";
    super(
      `The embedded database directory ${dataDir} is in use: ${who} its PostgreSQL there. ` +
        `This process leaves it alone and stops. To run both, set DATABASE_URL on this one to ` +
        `the running process's database${where}, or give it another TETHER_DATA_DIR. ` +
        `(Lock file: ${lockFile}; a new process takes it over once pid ${owner.pid} has exited.)`,
    );
    this.name = "DataDirInUseError";
  }
}

export interface DataDirLock {
  /** The lock file. */
  readonly file: string;
  readonly owner: LockOwner;
  /** Record the embedded server's port in the lock, so a refused second process can name it. */
  setPort(port: number): Promise<void>;
  /** Remove the lock if it is still ours. Idempotent. */
  release(): Promise<void>;
}

export interface AcquireOptions {
  /** Where the lock lives. Default: `<dataDir>.lock`, beside the directory (initdb wants it empty). */
  lockFile?: string;
  /** The embedded server's password file, named (never read) in the refusal so a second process can connect. */
  passwordFile?: string;
  log?: Pick<Logger, "warn">;
}

/** Lock files this process holds: a second acquire in one process is refused, not judged. */
const heldHere = new Map<string, LockOwner>();
/** Bounds the loop when other processes keep taking and giving up the lock. */
const ACQUIRE_DEADLINE_MS = 10_000;

/**
 * Take the data directory for this process, taking over a lock whose owner is gone. Throws
 * DataDirInUseError when a live process holds it. Call before touching the directory.
 */
export async function acquireDataDirLock(
  dataDir: string,
  opts: AcquireOptions = {},
): Promise<DataDirLock> {
  const dir = path.resolve(dataDir);
  const file = path.resolve(opts.lockFile ?? `${dir}.lock`);
  const log = opts.log;
  const already = heldHere.get(file);
  if (already) throw new DataDirInUseError(dir, file, already, true, opts.passwordFile);

  const self = processState(process.pid);
  const ctx: JudgeContext = { selfPid: process.pid, bootId: readBootId(), probe: processState };
  const owner: LockOwner = {
    pid: process.pid,
    startTime: self.startTime,
    bootId: ctx.bootId,
    hostname: os.hostname(),
    startedAt: new Date().toISOString(),
  };
  await fs.mkdir(path.dirname(file), { recursive: true });
  // Written in full before it appears under the lock's name: readers never see half a lock.
  const tmp = uniqueSibling(file, "new");
  await fs.writeFile(tmp, JSON.stringify(owner) + "\n", { mode: 0o644 });
  const deadline = Date.now() + ACQUIRE_DEADLINE_MS;
  try {
    while (Date.now() < deadline) {
      if (await linkExclusive(tmp, file)) {
        heldHere.set(file, owner);
        return handle(file, owner, log);
      }
      const verdict = judgeLock(await readIfExists(file), ctx);
      if (verdict.kind === "held")
        throw new DataDirInUseError(dir, file, verdict.owner, false, opts.passwordFile);
      if (verdict.kind === "stale") await takeOver(file, tmp, ctx, log);
    }
  } finally {
    await fs.rm(tmp, { force: true });
  }
  throw new Error(
    `Could not lock the data directory ${dir}: ${file} kept changing for ` +
      `${ACQUIRE_DEADLINE_MS / 1000} s (processes starting and stopping on it all the time?). ` +
      `Start one process per data directory.`,
  );
}

/**
 * Remove a stale lock. Judging a lock and removing it are two steps, and two processes doing
 * both at once could each remove the lock the other has just taken; so removal happens only
 * under a second lock, `<lock>.takeover`, taken the same way and held for milliseconds, and the
 * lock is judged again under it. (The main lock cannot change between that judgement and the
 * removal: a live owner's lock is never stale, and nobody else removes it.) A takeover lock
 * whose owner died mid-takeover is itself stale and is removed without a guard: racing on that
 * needs a crash in that millisecond and two processes starting in the next.
 */
async function takeOver(
  file: string,
  ownerTmp: string,
  ctx: JudgeContext,
  log: AcquireOptions["log"],
): Promise<void> {
  const guard = `${file}.takeover`;
  if (!(await linkExclusive(ownerTmp, guard))) {
    const text = await readIfExists(guard);
    if (judgeLock(text, ctx).kind === "stale") await fs.rm(guard, { force: true });
    else await sleep(5 + Math.random() * 20); // another process is taking over; see who won
    return;
  }
  try {
    const verdict = judgeLock(await readIfExists(file), ctx);
    if (verdict.kind !== "stale") return;
    log?.warn(
      { lockFile: file, previousOwnerPid: verdict.owner?.pid, reason: verdict.reason },
      "taking over the data directory from a Tether process that is gone",
    );
    await fs.rm(file, { force: true });
  } finally {
    await fs.rm(guard, { force: true });
  }
}

/** link(2) fails when the name exists: the atomic "create if absent" with the content in place. */
async function linkExclusive(from: string, to: string): Promise<boolean> {
  try {
    await fs.link(from, to);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function handle(file: string, owner: LockOwner, log: AcquireOptions["log"]): DataDirLock {
  let current = owner;
  let released = false;
  return {
    file,
    get owner() {
      return current;
    },
    async setPort(port) {
      if (released) return;
      current = { ...current, port };
      heldHere.set(file, current);
      const tmp = uniqueSibling(file, "new");
      await fs.writeFile(tmp, JSON.stringify(current) + "\n", { mode: 0o644 });
      // rename replaces atomically: a reader sees the old lock or the new one, never half.
      await fs.rename(tmp, file);
    },
    async release() {
      if (released) return;
      released = true;
      heldHere.delete(file);
      const onDisk = parseOwner((await readIfExists(file)) ?? "");
      if (onDisk?.pid !== owner.pid || onDisk.startTime !== owner.startTime) {
        log?.warn(
          { lockFile: file, ownerPid: onDisk?.pid },
          "the data directory lock was removed or replaced while this process held it; leaving it",
        );
        return;
      }
      await fs.rm(file, { force: true });
    },
  };
}

async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

function uniqueSibling(file: string, tag: string): string {
  return `${file}.${tag}-${process.pid}-${randomBytes(4).toString("hex")}`;
}
