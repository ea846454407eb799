import { spawn, type ChildProcess } from "node:child_process";
import type { Logger } from "../log.js";

/**
 * initdb and postgres as child processes: argument arrays, no shell, an environment built from
 * an allow-list (Tether's secrets stay out of the server's /proc/<pid>/environ), a bounded tail
 * of their output for error messages, and a stop that escalates.
 */

/** Who a child runs as; unset: as this process. Only root can ask for another. */
export interface RunAs {
  uid: number;
  gid: number;
}

/** What a PostgreSQL child needs: where to find programs, its locale (initdb takes the cluster's from it) and time zone. */
const PASSED = /^(?:PATH|LANG|LANGUAGE|TZ|LC_[A-Z_]+|LD_LIBRARY_PATH)$/;

export function postgresEnv(source: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(source)) if (v !== undefined && PASSED.test(k)) env[k] = v;
  env.PATH ??= "/usr/local/bin:/usr/bin:/bin";
  return env;
}

type ChildLog = Pick<Logger, "debug">;

export interface ChildSpec {
  file: string;
  args: string[];
  /** Set before the switch to runAs (libuv changes directory first, as the parent's user). */
  cwd: string;
  runAs?: RunAs;
  log?: ChildLog;
}

/** The last lines a child wrote, for error messages. */
class Tail {
  private lines: string[] = [];
  push(chunk: string): void {
    for (const line of chunk.split("\n")) if (line.trim()) this.lines.push(line.trimEnd());
    if (this.lines.length > 40) this.lines.splice(0, this.lines.length - 40);
  }
  text(): string {
    return this.lines.join("\n").slice(-2000);
  }
}

function start(spec: ChildSpec, tail: Tail): ChildProcess {
  const child = spawn(spec.file, spec.args, {
    cwd: spec.cwd,
    env: postgresEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    ...(spec.runAs ? { uid: spec.runAs.uid, gid: spec.runAs.gid } : {}),
  });
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      tail.push(chunk);
      spec.log?.debug({ postgres: chunk.trim() }, "postgres");
    });
  }
  return child;
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the program could not be started at all (EACCES, ENOENT). */
  spawnError?: NodeJS.ErrnoException;
  output: string;
}

/** Run to completion; never throws (the caller words the failure). */
export function runToEnd(spec: ChildSpec): Promise<Finished> {
  const tail = new Tail();
  return new Promise((resolve) => {
    const child = start(spec, tail);
    let spawnError: NodeJS.ErrnoException | undefined;
    child.once("error", (err) => (spawnError = err));
    child.once("close", (code, signal) =>
      resolve({ code, signal, output: tail.text(), ...(spawnError ? { spawnError } : {}) }),
    );
  });
}

export interface RunningServer {
  pid: number;
  /** Fast shutdown (SIGINT), then SIGQUIT, then SIGKILL; resolves once the server is gone. */
  stop(): Promise<void>;
}

/** Start `postgres` and resolve once it accepts connections; rejects with its last output if it exits first. */
export function startServer(spec: ChildSpec): Promise<RunningServer> {
  const tail = new Tail();
  return new Promise((resolve, reject) => {
    const child = start(spec, tail);
    let ready = false;
    // "exit", not "close": backends share the server's stderr and may hold it a moment longer.
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    child.once("error", (err) => reject(err));
    // Before it is ready there are no backends: "close" comes at once, with all its output read.
    child.once("close", (code, signal) => {
      if (!ready) {
        const how = signal ? `signal ${signal}` : `code ${code}`;
        reject(new Error(tail.text() || `postgres exited with ${how} before it was ready`));
      }
    });
    child.stderr?.on("data", (chunk: string) => {
      if (!ready && chunk.includes("database system is ready to accept connections")) {
        ready = true;
        resolve({ pid: child.pid!, stop: () => stopChild(child, exited) });
      }
    });
  });
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  for (const [signal, waitMs] of [
    ["SIGINT", 8000],
    ["SIGQUIT", 3000],
    ["SIGKILL", 2000],
  ] as const) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), waitMs))),
    ]);
    clearTimeout(timer);
    if (!timedOut) return;
  }
}
