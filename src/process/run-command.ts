/**
 * The one way Tether runs a child process. A short-lived command (git, the CLI's probe, a
 * sandboxed script) goes through runCommand: an argument array and no shell, an explicit
 * environment (nothing inherited), bounded output, its own process group so a stop reaches
 * everything it started, a timeout and an abort signal that stop it the same way (SIGTERM to
 * the group, SIGKILL after a grace period). The agent CLI's turn goes through spawnStreaming:
 * the same spawn, its output read as it comes; its run (src/agent-cli/cli-run.ts, through cli-run-processes.ts) stops it with
 * the same killGroup (kill.ts), through process-tree.ts, which also finds what left the group.
 */
import type { Readable, Writable } from "node:stream";
import { execa } from "execa";
import { killGroup } from "./kill.js";

export interface RunCommandOptions {
  cwd: string;
  /** The whole environment of the child. */
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** Written to stdin; default: stdin is closed. */
  input?: string | Buffer;
  /** Most bytes kept of stdout (and of stderr). Default 16 MiB. */
  maxBuffer?: number;
  /** After SIGTERM, how long before SIGKILL. Default 2000 ms. */
  killGraceMs?: number;
  /** Decode stdout as text (default) or keep it as bytes. */
  encoding?: "utf8" | "buffer";
  /** Bytes the child reads on file descriptor 3 (bubblewrap's seccomp program); default none. */
  fd3?: Uint8Array | undefined;
}

export interface CommandResult<Out = string> {
  /** -1 when the command did not exit by itself (it could not start, or was killed). */
  exitCode: number;
  stdout: Out;
  stderr: string;
  /** Set when Tether stopped it. */
  stoppedBy: "timeout" | "cancelled" | undefined;
  /** Set when it never ran (ENOENT, EACCES …): execa's message, naming the command. */
  startError: string | undefined;
  /**
   * Set when it did not end well (it never ran, exited with another code than 0, was killed or
   * stopped): what happened, in one line naming the command, in execa's words ("Command failed
   * with exit code 2: git …", "Command timed out after 15000 milliseconds: claude --version").
   */
  failure: string | undefined;
  signal: string | undefined;
}

export async function runCommand(
  file: string,
  args: string[],
  opts: RunCommandOptions & { encoding: "buffer" },
): Promise<CommandResult<Buffer>>;
export async function runCommand(
  file: string,
  args: string[],
  opts: RunCommandOptions,
): Promise<CommandResult<string>>;
export async function runCommand(
  file: string,
  args: string[],
  opts: RunCommandOptions,
): Promise<CommandResult<string | Buffer>> {
  if (opts.signal?.aborted) {
    return {
      exitCode: -1,
      stdout: opts.encoding === "buffer" ? Buffer.alloc(0) : "",
      stderr: "",
      stoppedBy: "cancelled",
      startError: undefined,
      failure: `Command was canceled: ${[file, ...args].join(" ")}`,
      signal: undefined,
    };
  }
  const child = execa(file, args, {
    cwd: opts.cwd,
    env: opts.env,
    extendEnv: false,
    reject: false,
    ...(opts.input === undefined ? {} : { input: opts.input }),
    stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe", ...extraFds(opts.fd3)],
    maxBuffer: opts.maxBuffer ?? 16 * 1024 * 1024,
    encoding: opts.encoding === "buffer" ? "buffer" : "utf8",
    // Bytes are file contents: every one of them counts, a final newline too.
    stripFinalNewline: opts.encoding !== "buffer",
    // Its own process group, so a kill also reaches what it started (git-remote-https, …).
    detached: true,
  });
  let stoppedBy: CommandResult["stoppedBy"];
  const grace = opts.killGraceMs ?? 2000;
  const stop = (why: "timeout" | "cancelled") => {
    stoppedBy ??= why;
    killGroup(child.pid, "SIGTERM");
    setTimeout(() => killGroup(child.pid, "SIGKILL"), grace).unref();
  };
  const timer = setTimeout(() => stop("timeout"), opts.timeoutMs);
  const onAbort = () => stop("cancelled");
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const r = await child;
    const started = r.exitCode !== undefined || r.signal !== undefined;
    const failure = r.failed ? (r.shortMessage ?? String(r.message)) : undefined;
    // Stopped here, execa saw only a signal: say why, as execa's own timeout would have.
    const forced =
      r.signal === "SIGKILL" ? ` and was forcefully terminated after ${grace} milliseconds` : "";
    return {
      exitCode: r.exitCode ?? -1,
      // execa gives bytes as a Uint8Array; callers get a Buffer (toString("utf8"), latin1…).
      stdout:
        opts.encoding === "buffer"
          ? r.stdout instanceof Uint8Array
            ? Buffer.from(r.stdout.buffer, r.stdout.byteOffset, r.stdout.byteLength)
            : Buffer.alloc(0)
          : String(r.stdout ?? ""),
      stderr: String(r.stderr ?? ""),
      stoppedBy,
      startError: started ? undefined : failure,
      failure:
        stoppedBy === "timeout"
          ? `Command timed out after ${opts.timeoutMs} milliseconds${forced}: ${r.escapedCommand}`
          : stoppedBy === "cancelled"
            ? `Command was canceled${forced}: ${r.escapedCommand}`
            : failure,
      signal: r.signal ?? undefined,
    };
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onAbort);
  }
}

export interface StreamingOptions {
  cwd: string;
  /** The whole environment of the child. */
  env: Record<string, string>;
  /** Written to stdin, which is then closed. */
  input: string;
  /** Bytes the child reads on file descriptor 3 (bubblewrap's seccomp program); default none. */
  fd3?: Uint8Array | undefined;
}

/** A child whose output is read as it comes; stopping it is the caller's (killGroup). */
export interface StreamingChild {
  /** Undefined when it could not start; startError() then says why. */
  readonly pid: number | undefined;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Its exit; code and signal both null when it could not start. */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  /** Why it could not start ("ENOENT", …). Ask only when pid is undefined. */
  startError(): Promise<string>;
}

/** Starts a long-running command in its own session and process group, its output unbuffered. */
export function spawnStreaming(
  file: string,
  args: string[],
  opts: StreamingOptions,
): StreamingChild {
  const child = execa(file, args, {
    cwd: opts.cwd,
    env: opts.env,
    extendEnv: false,
    // Its own session and process group, so a kill reaches everything it started in it.
    detached: true,
    input: opts.input,
    buffer: false,
    reject: false,
    stdio: ["pipe", "pipe", "pipe", ...extraFds(opts.fd3)],
    windowsHide: true,
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: null, signal: null }));
  });
  void child.catch(() => undefined); // settles with reject: false; the caller reads the streams
  return {
    pid: child.pid,
    stdout: child.stdout,
    stderr: child.stderr,
    exited,
    startError: async () => {
      const result = await child;
      return String(result.code ?? result.shortMessage);
    },
  };
}

/** A child Tether talks to over its stdin and stdout (an MCP server outside the agent's sandbox). */
export interface DuplexChild {
  readonly pid: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
}

/** Starts a command in its own process group with stdin, stdout and stderr open to the caller. */
export function spawnDuplex(
  file: string,
  args: string[],
  opts: Omit<StreamingOptions, "input">,
): DuplexChild {
  const child = execa(file, args, {
    cwd: opts.cwd,
    env: opts.env,
    extendEnv: false,
    detached: true,
    buffer: false,
    reject: false,
    stdio: ["pipe", "pipe", "pipe", ...extraFds(opts.fd3)],
    windowsHide: true,
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: null, signal: null }));
  });
  void child.catch(() => undefined);
  return { pid: child.pid, stdin: child.stdin, stdout: child.stdout, stderr: child.stderr, exited };
}

/** The child's descriptors after stderr: fd 3 carries `bytes` (execa writes them, then closes it). */
function extraFds(bytes: Uint8Array | undefined): Uint8Array[] {
  return bytes ? [bytes] : [];
}
