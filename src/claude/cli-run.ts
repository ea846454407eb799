/**
 * Runs one agent CLI turn as a child process: the spawn (spawnStreaming, src/process/; inside
 * the sandbox when there is one), the stream read line by line, the limits (start-up, stall,
 * wall clock), cancellation, the sweep of everything the CLI left, and the outcome. What
 * differs between CLIs (arguments, environment, how the model API is reached, the stream's
 * shape, how an end is classified and what it cost) is a CliDialect: Claude Code's is in
 * claude-cli.ts, Codex's in src/codex/.
 */
import fs from "node:fs";
import os from "node:os";
import type { Readable } from "node:stream";
import { pino } from "pino";
import { prettifyError } from "zod";
import type { Logger } from "../log.js";
import { killProcessesIn, ProcessTracker } from "../process/process-tree.js";
import { spawnStreaming, type StreamingChild } from "../process/run-command.js";
import type { ModelEndpoint } from "../sandbox/egress.js";
import type { PreparedCommand } from "../sandbox/sandbox.js";
import type { Classification, ExitFacts, StopReason } from "./classify-outcome.js";
import { EventChannel } from "./event-channel.js";
import { DEFAULT_MAX_LINE_BYTES } from "./line-splitter.js";
import {
  AgentSettings,
  type CliAdapter,
  type AgentRun,
  type CliCapabilities,
  type OutcomeKind,
  type RunEvent,
  type RunOutcome,
  type RunSpec,
  type RunUsage,
} from "./runtime-adapter.js";

/** How the CLI reaches the model API, split between Tether and the sandboxed CLI. */
export interface DialectModelAccess {
  endpoint: ModelEndpoint;
  /** Environment for the sandboxed CLI (placeholders). */
  inside: Record<string, string>;
  /** Environment for an unsandboxed CLI (the operator's real values). */
  outside: Record<string, string>;
  /** Names taken out of the child's environment before it enters a sandbox. */
  remove: readonly string[];
  /** The API base URL the CLI is told on its command line, when it takes it there. */
  insideBaseUrl?: string;
  outsideBaseUrl?: string;
}

/** A stream parser: bytes in, messages out. */
export interface DialectParser<M> {
  push(chunk: Buffer): M[];
  end(): M[];
  readonly counts: { unreadable: number; unknown: number };
  readonly lastUnreadable?: string | undefined;
}

/** Everything one CLI does differently. M: one parsed output line; S: what a run has shown. */
export interface CliDialect<M extends { kind: string }, S> {
  /** In sentences: "Claude CLI", "Codex CLI". */
  label: string;
  /** In log messages: "claude", "codex". */
  short: string;
  /** What to do when the binary cannot start. */
  installHint: string;
  /** A session id the CLI could have made; anything else never reaches argv. */
  sessionId: RegExp;
  args(
    settings: AgentSettings,
    resumeSessionId: string | undefined,
    where: { sandboxed: boolean; baseUrl: string | undefined },
  ): string[];
  /** The child's environment, allow-listed, without model credentials. */
  env(
    base: Record<string, string | undefined>,
    opts: { home: string | undefined; extra: Record<string, string> | undefined },
  ): Record<string, string>;
  modelAccess(base: Record<string, string | undefined>): DialectModelAccess;
  parser(maxLineBytes: number): DialectParser<M>;
  newState(): S;
  /** Before the spawn (the session's files are in place): e.g. read what it has used so far. */
  beforeStart?(state: S, spec: RunSpec, resumeSessionId: string | undefined): Promise<void>;
  /** After the exit, before classifying: e.g. read the session's files for the context size. */
  afterExit?(state: S, spec: RunSpec): Promise<void>;
  observe(state: S, message: M): RunEvent[];
  earlyStop(
    message: M,
    state: S,
    resumeSessionId: string | undefined,
  ): { reason: StopReason; detail: string } | undefined;
  /** The CLI's last word for the turn (after it, only a bound on lingering applies). */
  isFinal(message: M): boolean;
  classify(input: { resumeSessionId?: string; state: S; exit: ExitFacts }): Classification;
  /** The session this run started or resumed, as the CLI reported it. */
  sessionOf(state: S): string | undefined;
  resultText(state: S): string | undefined;
  toolRan(state: S): boolean;
  usage(state: S, wallMs: number): RunUsage;
  /** Host paths the sandbox shows read-only for the binary `exe` to run; default just it. */
  binds?(exe: string): string[];
  /** Arguments as logged (long user text shortened). */
  redactArgs?(args: string[]): string[];
  /**
   * Whether the CLI's first connection can come before the sandbox's egress bridge listens
   * (socat starts in about 12 ms). A CLI that takes far longer than that to boot skips the
   * wait for it (init-script.ts); default: wait.
   */
  bootsAfterBridge?: boolean;
}

/**
 * How a CLI's runs are made, the same for every CLI: createClaudeCli and createCodexCli take
 * them all optional (each finds its binary when `path` is not given).
 */
export interface CliRunOptions {
  /** The binary. */
  path: string;
  log?: Logger;
  /** What the child's environment is built from (see src/process/child-env.ts); default process.env. */
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

/** An CliAdapter over a dialect. */
export function createDialectCli<M extends { kind: string }, S>(
  name: string,
  dialect: CliDialect<M, S>,
  opts: CliRunOptions,
  probe: () => Promise<CliCapabilities>,
): CliAdapter {
  const live = new Set<CliRun<M, S>>();
  const config: RunConfig = {
    path: opts.path,
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
    name,
    path: opts.path,
    probe,
    start(spec: RunSpec): AgentRun {
      const run = new CliRun(spec, config, dialect);
      live.add(run);
      allRuns.add(run as CliRun<unknown & { kind: string }, unknown>);
      void run.outcome.finally(() => {
        live.delete(run);
        allRuns.delete(run as CliRun<unknown & { kind: string }, unknown>);
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

/** The options with their defaults filled in. */
type RunConfig = Required<CliRunOptions>;

/** If this process exits with runs going, their processes go with it. */
const allRuns = new Set<CliRun<{ kind: string }, unknown>>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const run of allRuns) run.killNow();
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export class CliRun<M extends { kind: string }, S> implements AgentRun {
  readonly outcome: Promise<RunOutcome>;
  readonly events: AsyncIterable<RunEvent>;
  private readonly channel: EventChannel<RunEvent>;
  private readonly state: S;
  private readonly log: Logger;
  private readonly startedAt = Date.now();
  private child: StreamingChild | undefined;
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
    private readonly dialect: CliDialect<M, S>,
  ) {
    this.state = dialect.newState();
    this.channel = new EventChannel(config.maxBufferedEvents);
    this.events = this.channel;
    this.log = config.log.child({ cwd: spec.cwd, resume: spec.resumeSessionId ?? null });
    this.outcome = this.run().catch((err: unknown) => {
      this.killNow();
      this.log.error({ err }, `${dialect.short} run failed inside the adapter`);
      return this.finish(
        "failed",
        `internal error in the ${dialect.label} adapter: ${String(err)}`,
        {
          exitCode: null,
          signal: null,
        },
      );
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
    if (resumeSessionId !== undefined && !this.dialect.sessionId.test(resumeSessionId)) {
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

    const { dialect } = this;
    const sandboxed = spec.sandbox?.sandbox.sandboxed ?? false;
    const access = dialect.modelAccess(this.config.baseEnv);
    const args = dialect.args(settings.data, resumeSessionId, {
      sandboxed,
      baseUrl: sandboxed ? access.insideBaseUrl : access.outsideBaseUrl,
    });
    const env = dialect.env(this.config.baseEnv, { home: spec.home, extra: spec.extraEnv });
    try {
      await dialect.beforeStart?.(this.state, spec, resumeSessionId);
    } catch (err) {
      this.log.warn({ err }, "could not read what the session holds before the run");
    }
    let command = {
      file: this.config.path,
      args,
      env: spec.sandbox ? env : { ...env, ...access.outside },
      cwd: spec.cwd,
    };
    if (spec.sandbox) {
      for (const name of access.remove) delete env[name];
      const exe = realBinary(this.config.path, env.PATH);
      // bwrap would say "Can't find source path": say what the unsandboxed spawn says instead.
      if (!fs.existsSync(exe)) return this.finishEarly("failed", this.cannotStart("ENOENT"));
      try {
        this.prepared = await spec.sandbox.sandbox.prepare({
          workspace: spec.cwd,
          ...(spec.home ? { home: spec.home } : {}),
          ...(spec.sandbox.origin ? { origin: spec.sandbox.origin } : {}),
          ...(spec.sandbox.masks ? { masks: spec.sandbox.masks } : {}),
          readOnly: this.dialect.binds?.(exe) ?? [exe],
          egress: {
            model: access.endpoint,
            network: spec.sandbox.network,
            waitForBridge: !this.dialect.bootsAfterBridge,
          },
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
    const child = spawnStreaming(command.file, command.args, {
      cwd: command.cwd,
      env: command.env,
      input: spec.prompt,
    });
    this.child = child;
    const { exited } = child;
    this.exitWaiter = exited.then(() => undefined);

    if (child.pid === undefined) {
      return this.finish("failed", this.cannotStart(await child.startError()), {
        exitCode: null,
        signal: null,
      });
    }
    this.log.debug(
      { pid: child.pid, args: dialect.redactArgs?.(args) ?? args },
      `${dialect.short} started`,
    );
    this.tracker = new ProcessTracker(child.pid);
    this.armTimers(settings.data.timeoutMs, settings.data.stallMs);
    const onAbort = () => this.cancel(abortReason(spec.signal));
    spec.signal?.addEventListener("abort", onAbort, { once: true });
    if (this.cancelRequest !== undefined)
      this.requestStop("cancelled", cancelDetail(this.cancelRequest));

    child.stderr.on("data", (chunk: Buffer) => this.keepStderr(chunk));
    const reading = this.readStdout(child.stdout, resumeSessionId);

    // bwrap reports a child killed by signal N as exit code 128 + N, as a shell does.
    const exit = spec.sandbox ? signalFromExitCode(await exited) : await exited;
    this.exited = true;
    // Whatever the CLI left behind (a command still running in its own session) goes too.
    await this.sweep();
    // Unsandboxed, a command that left the CLI's tree between two samples (a double fork into
    // a session of its own) is still found by where it runs: the key's workspace. (Sandboxed,
    // the sandbox's pid namespace ends with it, and everything in it.)
    if (!spec.sandbox) {
      const strays = await killProcessesIn(spec.cwd).catch(() => []);
      if (strays.length)
        this.log.warn({ pids: strays }, "ended processes of the run left in its workspace");
    }
    await this.prepared?.dispose();
    await this.drain(reading, child.stdout, child.stderr);
    spec.signal?.removeEventListener("abort", onAbort);
    this.clearTimers();

    try {
      await dialect.afterExit?.(this.state, spec);
    } catch (err) {
      this.log.warn({ err }, "could not read what the session holds after the run");
    }
    const classified = dialect.classify({
      resumeSessionId,
      state: this.state,
      exit: this.exitFacts(exit.code, exit.signal),
    });
    return this.finish(classified.kind, classified.detail, {
      exitCode: exit.code,
      signal: exit.signal,
    });
  }

  private async readStdout(stdout: Readable, resumeSessionId: string | undefined): Promise<void> {
    const parser = this.dialect.parser(this.config.maxLineBytes);
    try {
      for await (const chunk of stdout) {
        this.touch();
        this.stdoutSeen = true;
        await this.handle(parser.push(toBuffer(chunk)), resumeSessionId);
      }
    } catch (err) {
      // Destroyed after exit, or a read error: either way the stream is over.
      this.log.debug({ err }, `${this.dialect.short} stdout ended abruptly`);
    }
    await this.handle(parser.end(), resumeSessionId);
    this.parseCounts = parser.counts;
    if (parser.counts.unreadable > 0) {
      this.log.warn(
        { unreadable: parser.counts.unreadable, last: parser.lastUnreadable },
        `${this.dialect.short} output had lines that could not be read`,
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
        this.log.warn(
          `${this.dialect.short}'s output pipe stayed open after it exited; closing it`,
        );
        stdout.destroy();
        await reading;
      }
    }
    if (stderr && !stderr.closed) {
      await Promise.race([new Promise((r) => stderr.once("close", r)), sleep(500)]);
      stderr.destroy();
    }
  }

  private async handle(messages: M[], resumeSessionId: string | undefined): Promise<void> {
    for (const message of messages) {
      if (message.kind === "unreadable") {
        this.log.debug(
          { reason: (message as { reason?: unknown }).reason },
          `unreadable ${this.dialect.short} output line`,
        );
      }
      const events = this.dialect.observe(this.state, message);
      const stop = this.dialect.earlyStop(message, this.state, resumeSessionId);
      if (stop) {
        this.requestStop(stop.reason, stop.detail);
        // An init for another session than the one asked for is not this run's session:
        // nobody should pin it.
        if (stop.reason === "resume_rejected") continue;
      }
      for (const event of events) await this.deliver(event);
      if (this.dialect.isFinal(message) && !this.resultSeen) {
        this.resultSeen = true;
        this.resultAfterStop = this.stop !== undefined;
        // The turn is over: no limit applies any more, only a bound on lingering.
        this.clearTimers();
        this.timers.push(
          setTimeout(() => {
            this.log.warn(`${this.dialect.short} did not exit after its result line; stopping it`);
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
          `the ${this.dialect.label} printed nothing in the ${Math.round(startMs / 1000)} s after it started, so it was stopped; an operator should check that ${this.config.path} --version runs on the runner`,
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
    this.log.info({ reason, detail, pid: this.pid }, `stopping ${this.dialect.short} run`);
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
        this.log.warn({ pid: this.pid }, `${this.dialect.short} ignored SIGTERM; sending SIGKILL`);
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
        `processes of a ${this.dialect.short} run survived SIGKILL`,
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
      `could not start the ${this.dialect.label} at ${this.config.path}: ${why}; ` +
      this.dialect.installHint
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
    const { state, dialect } = this;
    const asked = this.spec.resumeSessionId;
    const started = dialect.sessionOf(state);
    const sessionId = started && (asked === undefined || started === asked) ? started : undefined;
    const outcome: RunOutcome = {
      kind,
      sessionId,
      // A turn stopped at its spend limit keeps what the agent had written by then.
      resultText:
        kind === "success" || kind === "turn_limit" ? dialect.resultText(state) : undefined,
      usage: dialect.usage(state, Date.now() - this.startedAt),
      toolRan: dialect.toolRan(state),
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
      `${dialect.short} run finished`,
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
