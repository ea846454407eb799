/**
 * The processes of a run, from /proc: the agent CLI's tree while it runs (ProcessTracker, which
 * also finds what left the CLI's process group), and whatever still works in a directory
 * (processesIn, killProcessesIn). Where there is no /proc, only group kills work. Signals go
 * out through kill.ts, as runCommand's do.
 */
import fs from "node:fs";
import { killGroup, killProcess } from "./kill.js";

/** One process as /proc shows it. */
export interface ProcEntry {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** Start time in clock ticks since boot: with pid, names a process even after pid reuse. */
  start: string;
  /** R, S, D, Z (zombie: already dead, only waiting to be reaped), … */
  state: string;
}

/** Every process, from /proc. Empty where there is no /proc (then only group kills work). */
export function readProcTable(procDir = "/proc"): ProcEntry[] {
  const table: ProcEntry[] = [];
  for (const name of pidDirs(procDir)) {
    let stat: string;
    try {
      stat = fs.readFileSync(`${procDir}/${name}/stat`, "utf8");
    } catch {
      continue; // gone since readdir
    }
    const entry = parseStat(stat);
    if (entry) table.push(entry);
  }
  return table;
}

/** The names of /proc's process directories (their pids); empty where there is no /proc. */
function pidDirs(procDir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(procDir);
  } catch {
    return [];
  }
  return names.filter((name) => {
    const c = name.charCodeAt(0);
    return c >= 48 && c <= 57;
  });
}

/** Parses /proc/<pid>/stat. The command name is in parentheses and may hold spaces or ")". */
export function parseStat(stat: string): ProcEntry | undefined {
  const close = stat.lastIndexOf(")");
  if (close === -1) return undefined;
  const pid = Number.parseInt(stat, 10);
  const f = stat.slice(close + 2).split(" ");
  // Fields after the name: state(3) ppid(4) pgrp(5) session(6) … starttime(22).
  const [state, ppid, pgid, sid] = [f[0], Number(f[1]), Number(f[2]), Number(f[3])];
  const start = f[19];
  if (!state || !Number.isInteger(pid) || start === undefined) return undefined;
  return { pid, ppid, pgid, sid, start, state };
}

/**
 * Knows which processes belong to one run. The CLI runs in its own session and process group,
 * but its Bash tool starts every command in a new session of its own (seen with 2.1.197), so a
 * group kill alone leaves a running command behind. The tracker therefore samples the CLI's
 * descendants while it runs and remembers their sessions and groups: a process counts as the
 * run's if it descends from the CLI or from a remembered process, or sits in a remembered
 * session or group, even after its parent died and it was re-parented.
 *
 * Limits: a command that double-forks into a new session between two samples and whose
 * parent exits before the next sample is not seen (sample often enough for your agents).
 */
export class ProcessTracker {
  private readonly ids = new Set<string>();
  private readonly sids = new Set<number>();
  private readonly pgids = new Set<number>();
  private readonly selfPid = process.pid;
  private readonly selfSid: number | undefined;
  private readonly selfPgid: number | undefined;

  constructor(
    readonly rootPid: number,
    private readonly readTable: () => ProcEntry[] = readProcTable,
  ) {
    const table = this.readTable();
    const self = table.find((p) => p.pid === this.selfPid);
    this.selfSid = self?.sid;
    this.selfPgid = self?.pgid;
    // The CLI was spawned as the leader of a new session and group.
    const root = table.find((p) => p.pid === rootPid);
    this.remember(
      root ?? { pid: rootPid, ppid: 0, pgid: rootPid, sid: rootPid, start: "", state: "" },
    );
  }

  /** Looks at /proc now; returns the run's live processes and remembers them. */
  sample(): ProcEntry[] {
    const table = this.readTable();
    const members = this.membersOf(table);
    for (const p of members) this.remember(p);
    return members;
  }

  /** Sends `signal` to the CLI's group and to every live process of the run. Returns how many. */
  signal(signal: NodeJS.Signals, members = this.sample()): number {
    let sent = 0;
    if (killGroup(this.rootPid, signal)) sent++;
    for (const p of members) if (killProcess(p.pid, signal)) sent++;
    return sent;
  }

  private membersOf(table: ProcEntry[]): ProcEntry[] {
    const children = new Map<number, ProcEntry[]>();
    for (const p of table) {
      const list = children.get(p.ppid);
      if (list) list.push(p);
      else children.set(p.ppid, [p]);
    }
    const found = new Map<number, ProcEntry>();
    const queue: ProcEntry[] = [];
    for (const p of table) {
      const mine =
        this.ids.has(`${p.pid}:${p.start}`) || this.sids.has(p.sid) || this.pgids.has(p.pgid);
      if (mine) queue.push(p);
    }
    while (queue.length > 0) {
      const p = queue.pop()!;
      if (found.has(p.pid) || !this.killable(p)) continue;
      found.set(p.pid, p);
      for (const child of children.get(p.pid) ?? []) queue.push(child);
    }
    return [...found.values()].filter((p) => p.state !== "Z");
  }

  /** Never this process, its session or its group (the runner itself lives there). */
  private killable(p: ProcEntry): boolean {
    return (
      p.pid !== this.selfPid &&
      p.pid > 1 &&
      (this.selfSid === undefined || p.sid !== this.selfSid) &&
      (this.selfPgid === undefined || p.pgid !== this.selfPgid)
    );
  }

  private remember(p: ProcEntry): void {
    if (p.start) this.ids.add(`${p.pid}:${p.start}`);
    if (p.sid > 1 && p.sid !== this.selfSid) this.sids.add(p.sid);
    if (p.pgid > 1 && p.pgid !== this.selfPgid) this.pgids.add(p.pgid);
  }
}

/**
 * Processes working in `dir` or below it (their cwd), other than this process and its session.
 * After a crash of Tether the CLI of an unfinished run keeps going (it runs in a session of its
 * own); before a task is run again in its working directory, whatever still works there must
 * go, or two CLIs would write one session.
 */
export function processesIn(dir: string, procDir = "/proc"): ProcEntry[] {
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  // The cwd link first: it rules out nearly every process, so only the few working in `dir`
  // have their stat read (this runs before every turn's spawn).
  const inDir: ProcEntry[] = [];
  for (const name of pidDirs(procDir)) {
    if (Number(name) === process.pid) continue;
    let cwd: string;
    try {
      cwd = fs.readlinkSync(`${procDir}/${name}/cwd`);
    } catch {
      continue; // gone, or not ours to look at
    }
    if (cwd !== dir && !cwd.startsWith(prefix)) continue;
    try {
      const entry = parseStat(fs.readFileSync(`${procDir}/${name}/stat`, "utf8"));
      if (entry && entry.state !== "Z") inDir.push(entry);
    } catch {
      /* gone since */
    }
  }
  if (inDir.length === 0) return inDir;
  let selfSid: number | undefined;
  try {
    selfSid = parseStat(fs.readFileSync(`${procDir}/${process.pid}/stat`, "utf8"))?.sid;
  } catch {
    selfSid = undefined;
  }
  return inDir.filter((p) => selfSid === undefined || p.sid !== selfSid);
}

/** Ends every process working in `dir` (SIGTERM, then SIGKILL after `graceMs`). Returns their pids. */
export async function killProcessesIn(dir: string, graceMs = 2000): Promise<number[]> {
  const found = processesIn(dir);
  if (found.length === 0) return [];
  for (const p of found) killProcess(p.pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && processesIn(dir).length > 0) {
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const p of processesIn(dir)) killProcess(p.pid, "SIGKILL");
  return found.map((p) => p.pid);
}
