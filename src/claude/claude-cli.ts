import fs from "node:fs";
import os from "node:os";
import type { Readable } from "node:stream";
import { execa, type ResultPromise } from "execa";
import { pino } from "pino";
import { prettifyError } from "zod";
import type { Logger } from "../log.js";
import type { PreparedCommand } from "../sandbox/sandbox.js";
import { buildChildEnv } from "./child-env.js";
import { buildClaudeArgs, SESSION_ID } from "./claude-args.js";
import { resolveClaudePath } from "./claude-path.js";
import { CLAUDE_MODEL_ENV, claudeModelAccess } from "./model-endpoint.js";
import { classifyOutcome, earlyStop, type ExitFacts, type StopReason } from "./classify-outcome.js";
import { EventChannel } from "./event-channel.js";
import { DEFAULT_MAX_LINE_BYTES } from "./line-splitter.js";
import { probeCli } from "./probe-cli.js";
import { ProcessTracker } from "./process-tree.js";
import { newEvidence, observe, type RunEvidence } from "./run-evidence.js";
import {
  AgentSettings,
  type AgentCli,
  type AgentRun,
  type CliCapabilities,
  type OutcomeKind,
  type RunEvent,
  type RunOutcome,
  type RunSpec,
} from "./runtime-adapter.js";
import { StreamParser, type StreamMessage } from "./stream-parser.js";
import { summarizeUsage } from "./usage.js";

export interface ClaudeCliOptions {
  /** The binary; default resolveClaudePath(process.env). */
  path?: string;
  log?: Logger;
  /** What the child's environment is built from (see child-env.ts); default process.env. */
  baseEnv?: Record<string, string | undefined>;
  /** After SIGTERM, how long before SIGKILL. Default 5000 ms. */
  killGraceMs?: number;
  /** How long the CLI may linger after its result line before it is stopped. Default 10 s. */
  afterResultGraceMs?: number;
  /**
   * How long the CLI may take to print its first line. The real one prints its init line
   * within a second or two; a binary that has printed nothing by then is wedged (stuck on a
   * lock, a prompt, a broken install) and is stopped, so the thread hears about it within
   * half a minute rather than after the stall limit (minutes). Default 20 s.
   */
  startTimeoutMs?: number;
  /** Longest stdout line kept; longer ones are skipped and counted. Default 32 MiB. */
  maxLineBytes?: number;
  /** How much of stderr the outcome keeps. Default 8 KiB. */
  stderrTailBytes?: number;
  /** How often the run's process tree is looked at. Default 1000 ms. */
  sampleIntervalMs?: number;
  /** Unread events kept for the `events` iterator. Default 10000. */
  maxBufferedEvents?: number;
}

/** The Claude Code CLI as an AgentCli. */
export function createClaudeCli(opts: ClaudeCliOptions = {}): AgentCli {
  const path =
    opts.path ?? resolveClaudePath({ TETHER_CLAUDE_PATH: process.env.TETHER_CLAUDE_PATH });
  const live = new Set<ClaudeRun>();
  const config: RunConfig = {
    path,
    log: opts.log ?? pino({ level: "silent" }),
    baseEnv: opts.baseEnv ?? process.env,
    killGraceMs: opts.killGraceMs ?? 5000,
    afterResultGraceMs: opts.afterResultGraceMs ?? 10_000,
    startTimeoutMs: opts.startTimeoutMs ?? 20_000,
    maxLineBytes: opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
    stderrTailBytes: opts.stderrTailBytes ?? 8 * 1024,
    sampleIntervalMs: opts.sampleIntervalMs ?? 1000,
    maxBufferedEvents: opts.maxBufferedEvents ?? 10_000,
  };
  return {
    name: "claude-code",
    path,
    probe: (): Promise<CliCapabilities> => probeCli(path, { env: config.baseEnv }),
    start(spec: RunSpec): AgentRun {
      const run = new ClaudeRun(spec, config);
      live.add(run);
      allRuns.add(run);
      void run.outcome.finally(() => {
        live.delete(run);
        allRuns.delete(run);
      });
      return run;
    },
    activeRuns: () => live.size,
    async cancelAll(reason = "shutting down"): Promise<void> {
      const runs = [...live];
      for (const run of runs) run.cancel(reason);
      await Promise.all(runs.map((run) => run.outcome));
    },
  };
}

interface RunConfig {
  path: string;
  log: Logger;
  baseEnv: Record<string, string | undefined>;
  killGraceMs: number;
  afterResultGraceMs: number;
  startTimeoutMs: number;
  maxLineBytes: number;
  stderrTailBytes: number;
  sampleIntervalMs: number;
  maxBufferedEvents: number;
}

/** If this process exits with runs going, their processes go with it. */
const allRuns = new Set<ClaudeRun>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const run of allRuns) run.killNow();
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

class ClaudeRun implements AgentRun {
  readonly outcome: Promise<RunOutcome>;
  readonly events: AsyncIterable<RunEvent>;
  private readonly channel: EventChannel<RunEvent>;
  private readonly evidence: RunEvidence = newEvidence();
  private readonly log: Logger;
  private readonly startedAt = Date.now();
  private child: ResultPromise | undefined;
  private prepared: PreparedCommand | undefined;
  private tracker: ProcessTracker | undefined;
  private stop: { reason: StopReason; detail: string } | undefined;
  private cancelRequest: string | undefined;
  private terminating: Promise<void> | undefined;
  private exited = false;
  private exitWaiter: Promise<void> = Promise.resolve();
  private lastActivity = Date.now();
  private stdoutSeen = false;
  private resultSeen = false;
  private resultAfterStop = false;
  private inHandler = false;
  private readonly timers: NodeJS.Timeout[] = [];
  private stderr: Buffer[] = [];
  private stderrBytes = 0;

  constructor(
    private readonly spec: RunSpec,
    private readonly config: RunConfig,
  ) {
    this.channel = new EventChannel(config.maxBufferedEvents);
    this.events = this.channel;
    this.log = config.log.child({ cwd: spec.cwd, resume: spec.resumeSessionId ?? null });
    this.outcome = this.run().catch((err: unknown) => {
      this.killNow();
      this.log.error({ err }, "claude run failed inside the adapter");
      return this.finish("failed", `internal error in the Claude adapter: ${String(err)}`, {
        exitCode: null,
        signal: null,
      });
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  [Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    return this.channel[Symbol.asyncIterator]();
  }

  cancel(reason?: string): void {
    this.cancelRequest ??= reason ?? "";
    if (this.child) this.requestStop("cancelled", cancelDetail(reason));
  }

  /** SIGKILL everything of the run, synchronously (process exit). */
  killNow(): void {
    if (this.tracker && !this.exited) this.tracker.signal("SIGKILL");
  }

  private async run(): Promise<RunOutcome> {
    const { spec } = this;
    const settings = AgentSettings.safeParse(spec.settings);
    if (!settings.success) {
      return this.finishEarly("failed", `invalid agent settings: ${prettifyError(settings.error)}`);
    }
    const { resumeSessionId } = spec;
    if (resumeSessionId !== undefined && !SESSION_ID.test(resumeSessionId)) {
      return this.finishEarly(
        "resume_rejected",
        `${JSON.stringify(resumeSessionId)} is not a session id the CLI could have made`,
      );
    }
    if (spec.signal?.aborted || this.cancelRequest !== undefined) {
      return this.finishEarly(
        "cancelled",
        cancelDetail(this.cancelRequest ?? abortReason(spec.signal)),
      );
    }
    if (!isDirectory(spec.cwd)) {
      return this.finishEarly(
        "failed",
        `working directory ${spec.cwd} does not exist or is not a directory; prepare the workspace first`,
      );
    }

    const args = buildClaudeArgs(settings.data, resumeSessionId);
    const env = buildChildEnv(this.config.baseEnv, { home: spec.home, extra: spec.extraEnv });
    let command = { file: this.config.path, args, env, cwd: spec.cwd };
    if (spec.sandbox) {
      const access = claudeModelAccess(this.config.baseEnv);
      for (const name of CLAUDE_MODEL_ENV) delete env[name];
      const exe = realBinary(this.config.path, env.PATH);
      // bwrap would say "Can't find source path": say what the unsandboxed spawn says instead.
      if (!fs.existsSync(exe)) return this.finishEarly("failed", this.cannotStart("ENOENT"));
      try {
        this.prepared = await spec.sandbox.sandbox.prepare({
          workspace: spec.cwd,
          ...(spec.home ? { home: spec.home } : {}),
          ...(spec.sandbox.origin ? { origin: spec.sandbox.origin } : {}),
          ...(spec.sandbox.masks ? { masks: spec.sandbox.masks } : {}),
          readOnly: [exe],
          egress: { model: access.endpoint, network: spec.sandbox.network },
          env,
          modelEnv: { inside: access.inside, outside: access.outside },
          command: [exe, ...args],
        });
      } catch (err) {
        return this.finishEarly(
          "failed",
          `could not prepare the sandbox: ${(err as Error).message}`,
        );
      }
      command = this.prepared;
    }
    installExitHook();
    const child = execa(command.file, command.args, {
      cwd: command.cwd,
      env: command.env,
      extendEnv: false,
      // Its own session and process group, so a kill reaches everything it started in it.
      detached: true,
      input: spec.prompt,
      buffer: false,
      reject: false,
      stdout: "pipe",
      stderr: "pipe",
      windowsHide: true,
    });
    this.child = child;
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }));
      child.once("error", () => resolve({ code: null, signal: null }));
    });
    this.exitWaiter = exited.then(() => undefined);

    if (child.pid === undefined) {
      const result = await child;
      return this.finish("failed", this.cannotStart(String(result.code ?? result.shortMessage)), {
        exitCode: null,
        signal: null,
      });
    }
    this.log.debug({ pid: child.pid, args: redactArgs(args) }, "claude started");
    this.tracker = new ProcessTracker(child.pid);
    this.armTimers(settings.data.timeoutMs, settings.data.stallMs);
    const onAbort = () => this.cancel(abortReason(spec.signal));
    spec.signal?.addEventListener("abort", onAbort, { once: true });
    if (this.cancelRequest !== undefined)
      this.requestStop("cancelled", cancelDetail(this.cancelRequest));

    child.stderr?.on("data", (chunk: Buffer) => this.keepStderr(chunk));
    const reading = this.readStdout(child.stdout!, resumeSessionId);

    // bwrap reports a child killed by signal N as exit code 128 + N, as a shell does.
    const exit = spec.sandbox ? signalFromExitCode(await exited) : await exited;
    this.exited = true;
    // Whatever the CLI left behind (a command still running in its own session) goes too.
    await this.sweep();
    await this.prepared?.dispose();
    await this.drain(reading, child.stdout!, child.stderr);
    void child.catch(() => undefined); // settled with reject: false; nothing more to learn
    spec.signal?.removeEventListener("abort", onAbort);
    this.clearTimers();

    const classified = classifyOutcome({
      resumeSessionId,
      evidence: this.evidence,
      exit: this.exitFacts(exit.code, exit.signal),
    });
    return this.finish(classified.kind, classified.detail, {
      exitCode: exit.code,
      signal: exit.signal,
    });
  }

  private async readStdout(stdout: Readable, resumeSessionId: string | undefined): Promise<void> {
    const parser = new StreamParser(this.config.maxLineBytes);
    try {
      for await (const chunk of stdout) {
        this.touch();
        this.stdoutSeen = true;
        await this.handle(parser.push(toBuffer(chunk)), resumeSessionId);
      }
    } catch (err) {
      // Destroyed after exit, or a read error: either way the stream is over.
      this.log.debug({ err }, "claude stdout ended abruptly");
    }
    await this.handle(parser.end(), resumeSessionId);
    this.parseCounts = parser.counts;
    if (parser.counts.unreadable > 0) {
      this.log.warn(
        { unreadable: parser.counts.unreadable, last: parser.lastUnreadable },
        "claude output had lines that could not be read",
      );
    }
  }

  private parseCounts = { unreadable: 0, unknown: 0 };

  /**
   * Reads the rest of the output after the CLI exited. Every line it wrote is read, however
   * slow the caller's onEvent is; but a pipe some unknown process still holds open, with
   * nothing flowing, is given up after a while instead of waited on forever.
   */
  private async drain(
    reading: Promise<void>,
    stdout: Readable,
    stderr: Readable | null,
  ): Promise<void> {
    let done = false;
    void reading.then(() => (done = true));
    while (!done) {
      await Promise.race([reading, sleep(250)]);
      if (!done && !this.inHandler && Date.now() - this.lastActivity > 2000) {
        this.log.warn("claude's output pipe stayed open after it exited; closing it");
        stdout.destroy();
        await reading;
      }
    }
    if (stderr && !stderr.closed) {
      await Promise.race([new Promise((r) => stderr.once("close", r)), sleep(500)]);
      stderr.destroy();
    }
  }

  private async handle(
    messages: StreamMessage[],
    resumeSessionId: string | undefined,
  ): Promise<void> {
    for (const message of messages) {
      if (message.kind === "unreadable") {
        this.log.debug({ reason: message.reason }, "unreadable claude output line");
      }
      const events = observe(this.evidence, message);
      const stop = earlyStop(message, this.evidence, resumeSessionId);
      if (stop) {
        this.requestStop(stop.reason, stop.detail);
        // An init for another session than the one asked for is not this run's session:
        // nobody should pin it.
        if (stop.reason === "resume_rejected") continue;
      }
      for (const event of events) await this.deliver(event);
      if (message.kind === "result" && !this.resultSeen) {
        this.resultSeen = true;
        this.resultAfterStop = this.stop !== undefined;
        // The turn is over: no limit applies any more, only a bound on lingering.
        this.clearTimers();
        this.timers.push(
          setTimeout(() => {
            this.log.warn("claude did not exit after its result line; stopping it");
            void this.terminate();
          }, this.config.afterResultGraceMs),
        );
      }
    }
  }

  private async deliver(event: RunEvent): Promise<void> {
    this.channel.push(event);
    if (!this.spec.onEvent) return;
    this.inHandler = true;
    try {
      await this.spec.onEvent(event);
    } catch (err) {
      this.log.error({ err, event: event.type }, "onEvent handler failed; the run goes on");
    } finally {
      this.inHandler = false;
      // Time spent in the caller's handler is not the CLI being silent.
      this.touch();
    }
  }

  private armTimers(timeoutMs: number, stallMs: number): void {
    const startMs = this.config.startTimeoutMs;
    this.timers.push(
      setTimeout(() => {
        if (this.stdoutSeen) return;
        this.requestStop(
          "no_start",
          `the Claude CLI printed nothing in the ${Math.round(startMs / 1000)} s after it started, so it was stopped; an operator should check that ${this.config.path} --version runs on the runner`,
        );
      }, startMs),
    );
    this.timers.push(
      setTimeout(
        () => this.requestStop("timed_out", `stopped at the wall-clock limit of ${timeoutMs} ms`),
        timeoutMs,
      ),
    );
    const checkStall = () => {
      // Before its first line the start-up limit watches the CLI (a slow start on a busy
      // machine is not a stall); while the caller's handler runs nothing is read, so the
      // CLI's silence cannot be told.
      const quiet = this.inHandler || !this.stdoutSeen ? 0 : Date.now() - this.lastActivity;
      if (quiet >= stallMs) {
        this.requestStop("stalled", `stopped after ${stallMs} ms without any output from the CLI`);
      } else {
        this.timers.push(setTimeout(checkStall, stallMs - quiet));
      }
    };
    this.timers.push(setTimeout(checkStall, stallMs));
    const sample = setInterval(() => this.tracker?.sample(), this.config.sampleIntervalMs);
    sample.unref();
    this.timers.push(sample);
  }

  private clearTimers(): void {
    for (const t of this.timers.splice(0)) clearTimeout(t);
  }

  private touch(): void {
    this.lastActivity = Date.now();
  }

  private requestStop(reason: StopReason, detail: string): void {
    if (this.exited || this.stop) return;
    this.stop = { reason, detail };
    this.log.info({ reason, detail, pid: this.pid }, "stopping claude run");
    void this.terminate();
  }

  /** SIGTERM to the run's processes, SIGKILL to what is left after the grace period. */
  private terminate(): Promise<void> {
    this.terminating ??= (async () => {
      const tracker = this.tracker;
      if (!tracker) return;
      tracker.signal("SIGTERM");
      const graceOver = sleep(this.config.killGraceMs).then(() => "grace" as const);
      if (
        (await Promise.race([this.exitWaiter.then(() => "exited" as const), graceOver])) === "grace"
      ) {
        this.log.warn({ pid: this.pid }, "claude ignored SIGTERM; sending SIGKILL");
      }
      tracker.signal("SIGKILL");
    })();
    return this.terminating;
  }

  /** After the CLI exited: end every process it left, and check that none remain. */
  private async sweep(): Promise<void> {
    const tracker = this.tracker;
    if (!tracker) return;
    for (let round = 0; round < 5; round++) {
      const members = tracker.sample();
      if (members.length === 0) return;
      if (round === 0) {
        this.log.debug({ pids: members.map((p) => p.pid) }, "ending processes the CLI left behind");
      }
      tracker.signal(round === 0 ? "SIGTERM" : "SIGKILL", members);
      await sleep(round === 0 ? 200 : 100);
    }
    const left = tracker.sample();
    if (left.length > 0) {
      this.log.error(
        { pids: left.map((p) => p.pid) },
        "processes of a claude run survived SIGKILL",
      );
    }
  }

  private keepStderr(chunk: Buffer): void {
    this.touch();
    this.stderr.push(chunk);
    this.stderrBytes += chunk.length;
    while (
      this.stderr.length > 1 &&
      this.stderrBytes - this.stderr[0]!.length >= this.config.stderrTailBytes
    ) {
      this.stderrBytes -= this.stderr.shift()!.length;
    }
  }

  private stderrTail(): string {
    const all = Buffer.concat(this.stderr);
    return all.subarray(Math.max(0, all.length - this.config.stderrTailBytes)).toString("utf8");
  }

  private exitFacts(exitCode: number | null, signal: string | null): ExitFacts {
    return {
      exitCode,
      signal,
      stderrTail: this.stderrTail(),
      ...(this.stop ? { stop: this.stop, resultAfterStop: this.resultAfterStop } : {}),
    };
  }

  private cannotStart(why: string): string {
    return (
      `could not start the Claude CLI at ${this.config.path}: ${why}; ` +
      "set TETHER_CLAUDE_PATH or install @anthropic-ai/claude-code"
    );
  }

  private finishEarly(kind: OutcomeKind, detail: string): RunOutcome {
    return this.finish(kind, detail, { exitCode: null, signal: null });
  }

  private finish(
    kind: OutcomeKind,
    detail: string,
    exit: { exitCode: number | null; signal: string | null },
  ): RunOutcome {
    this.clearTimers();
    void this.prepared?.dispose();
    this.channel.close();
    const { evidence } = this;
    const asked = this.spec.resumeSessionId;
    const init = evidence.init;
    const sessionId =
      init && (asked === undefined || init.sessionId === asked) ? init.sessionId : undefined;
    const outcome: RunOutcome = {
      kind,
      sessionId,
      resultText:
        kind === "success"
          ? (evidence.result?.result ?? evidence.lastText ?? undefined)
          : kind === "turn_limit"
            ? (evidence.lastText ?? undefined) // what the agent had written when it was stopped
            : undefined,
      usage: summarizeUsage(evidence, Date.now() - this.startedAt),
      toolRan: evidence.toolUses > 0,
      detail,
      stderrTail: this.stderrTail(),
      exitCode: exit.exitCode,
      signal: exit.signal,
      unreadableLines: this.parseCounts.unreadable,
      unknownLines: this.parseCounts.unknown,
    };
    if (this.channel.dropped > 0) {
      this.log.warn({ dropped: this.channel.dropped }, "events were dropped: nobody read them");
    }
    this.log.info(
      {
        kind,
        detail,
        sessionId,
        toolRan: outcome.toolRan,
        exitCode: exit.exitCode,
        signal: exit.signal,
      },
      "claude run finished",
    );
    return outcome;
  }
}

/** The binary's real path (after PATH lookup and links): what the sandbox binds and runs. */
function signalFromExitCode(exit: { code: number | null; signal: string | null }): {
  code: number | null;
  signal: string | null;
} {
  if (exit.signal || exit.code === null || exit.code <= 128) return exit;
  const name = Object.entries(os.constants.signals).find(([, n]) => n === exit.code! - 128)?.[0];
  return name ? { code: null, signal: name } : exit;
}

function realBinary(file: string, pathVar: string | undefined): string {
  let found = file;
  if (!file.includes("/")) {
    for (const dir of (pathVar ?? "").split(":")) {
      if (dir && fs.existsSync(`${dir}/${file}`)) {
        found = `${dir}/${file}`;
        break;
      }
    }
  }
  try {
    return fs.realpathSync(found);
  } catch {
    return found;
  }
}

function toBuffer(chunk: unknown): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
}

function isDirectory(dir: string): boolean {
  try {
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

function cancelDetail(reason: string | undefined): string {
  return reason ? `cancelled: ${reason}` : "cancelled by request";
}

function abortReason(signal: AbortSignal | undefined): string | undefined {
  const reason: unknown = signal?.reason;
  if (reason === undefined) return undefined;
  if (reason instanceof Error) return reason.name === "AbortError" ? undefined : reason.message;
  return String(reason);
}

/** The extra system prompt may be long and is the repo's text: log its size, not its words. */
function redactArgs(args: string[]): string[] {
  return args.map((a, i) =>
    args[i - 1] === "--append-system-prompt" ? `(${a.length} characters)` : a,
  );
}
