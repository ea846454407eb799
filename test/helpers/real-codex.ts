import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/*
 * Runs the real Codex CLI (the pinned @openai/codex native binary) the way codex-cli-facts.md
 * records it: `codex exec --json`, the prompt on stdin, an explicit environment, the child in a
 * process group of its own that is killed whole on a deadline. For tests and for recording
 * fixtures; the runner's adapter is built later on the same facts.
 */

/** Rust target triple of the binary inside each platform package (see bin/codex.js). */
const TARGETS: Record<string, { pkg: string; triple: string }> = {
  "linux-x64": { pkg: "@openai/codex-linux-x64", triple: "x86_64-unknown-linux-musl" },
  "linux-arm64": { pkg: "@openai/codex-linux-arm64", triple: "aarch64-unknown-linux-musl" },
  "darwin-x64": { pkg: "@openai/codex-darwin-x64", triple: "x86_64-apple-darwin" },
  "darwin-arm64": { pkg: "@openai/codex-darwin-arm64", triple: "aarch64-apple-darwin" },
};

/**
 * The native binary of the pinned `@openai/codex`: the optional dependency
 * `@openai/codex-<platform>-<arch>` (npm alias of `@openai/codex@<version>-<platform>-<arch>`)
 * holds it at `vendor/<triple>/bin/codex`. The launcher `bin/codex.js` only finds and spawns
 * it; it has no install script, so a plain `npm ci` is enough. TETHER_CODEX_PATH wins.
 */
export function resolveCodexBinary(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TETHER_CODEX_PATH) return env.TETHER_CODEX_PATH;
  const target = TARGETS[`${process.platform}-${process.arch}`];
  if (!target) throw new Error(`no Codex binary for ${process.platform}-${process.arch}`);
  const require = createRequire(import.meta.url);
  const dir = path.dirname(require.resolve(`${target.pkg}/package.json`));
  const bin = path.join(dir, "vendor", target.triple, "bin", "codex");
  fs.accessSync(bin, fs.constants.X_OK);
  return bin;
}

/** One JSON line Codex printed on stdout (`--json`). */
export type CodexEvent = { type: string; [key: string]: unknown };

export interface CodexRunOptions {
  /** Everything after the binary, e.g. ["exec", "--json", ..., "-"]. */
  args: string[];
  /** Written to stdin, then stdin is closed. */
  prompt: string;
  cwd: string;
  /** The child's whole environment (nothing is inherited). */
  env: Record<string, string | undefined>;
  /** Kill the group (SIGKILL) after this long; the result says timedOut. */
  timeoutMs: number;
  /** Stop the run (SIGTERM to the group) once an event satisfies this. */
  stopWhen?: (event: CodexEvent) => boolean;
  /** Aborting it stops the run (SIGTERM to the group). */
  signal?: AbortSignal;
  /** Called with each event as it is read. */
  onEvent?: (event: CodexEvent) => void;
  binary?: string;
}

export interface CodexRunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stdout lines that parsed as JSON, in order. */
  events: CodexEvent[];
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
  /** stopWhen matched, or the signal aborted, and the run was stopped. */
  stopped: boolean;
}

export function runCodex(opts: CodexRunOptions): Promise<CodexRunResult> {
  const started = Date.now();
  const child = spawn(opts.binary ?? resolveCodexBinary(), opts.args, {
    cwd: opts.cwd,
    env: Object.fromEntries(
      Object.entries(opts.env).filter((e): e is [string, string] => e[1] !== undefined),
    ),
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const events: CodexEvent[] = [];
  let stdout = "";
  let stderr = "";
  let partial = "";
  let timedOut = false;
  let stopped = false;
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      /* already gone */
    }
  };
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup("SIGKILL");
  }, opts.timeoutMs);

  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    stdout += chunk;
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf("\n")) !== -1) {
      const line = partial.slice(0, nl).trim();
      partial = partial.slice(nl + 1);
      if (!line) continue;
      try {
        const event = JSON.parse(line) as CodexEvent;
        events.push(event);
        opts.onEvent?.(event);
        if (!stopped && opts.stopWhen?.(event)) {
          stopped = true;
          killGroup("SIGTERM");
        }
      } catch {
        /* not JSON: kept in stdout */
      }
    }
  });
  const onAbort = () => {
    stopped = true;
    killGroup("SIGTERM");
  };
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener("abort", onAbort, { once: true });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (stderr += chunk));
  child.stdin.on("error", () => {
    /* the child may exit before reading all of stdin */
  });
  child.stdin.end(opts.prompt);

  return new Promise((resolve, reject) => {
    child.once("error", (err) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      reject(err);
    });
    child.once("close", (exitCode, signal) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      // Anything left in the group (a sandboxed command) goes too.
      killGroup("SIGKILL");
      resolve({
        exitCode,
        signal,
        events,
        stdout,
        stderr,
        durationMs: Date.now() - started,
        timedOut,
        stopped,
      });
    });
  });
}

/** The thread id of a run: the `thread.started` event's `thread_id`. */
export function threadIdOf(result: { events: CodexEvent[] }): string | undefined {
  const started = result.events.find((e) => e.type === "thread.started");
  return typeof started?.thread_id === "string" ? started.thread_id : undefined;
}

/** The items of `item.completed` events, in order. */
export function completedItems(result: {
  events: CodexEvent[];
}): Array<{ id: string; type: string; [key: string]: unknown }> {
  return result.events
    .filter((e) => e.type === "item.completed")
    .map((e) => e.item as { id: string; type: string; [key: string]: unknown });
}
