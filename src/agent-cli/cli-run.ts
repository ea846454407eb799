/**
 * Runs one agent CLI turn as a child process: the spawn (spawnStreaming, src/process/; inside
 * the sandbox when there is one), the stream read line by line and its events delivered, the
 * stops (a limit, a cancel, the dialect's early stop) and the outcome. What differs between
 * CLIs is a CliDialect (cli-dialect.ts); the limits are in cli-run-limits.ts, the process tree
 * in cli-run-processes.ts, the outcome in cli-run-outcome.ts; cli-adapter.ts makes the runs.
 */
import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { prettifyError } from "zod";
import type { Logger } from "../log.js";
import { killProcessesIn } from "../process/process-tree.js";
import { spawnStreaming, type StreamingChild } from "../process/run-command.js";
import { lineCommentServer, readOnlyPaths } from "../review/line-comment-tool.js";
import { IN_SANDBOX } from "../sandbox/bwrap-args.js";
import { BRIDGE_URL } from "../sandbox/init-script.js";
import {
  mcpServerPaths,
  mcpSocketPath,
  type McpRemote,
  type PreparedCommand,
  type SandboxRun,
} from "../sandbox/sandbox.js";
import { hiddenMasks, withHidden } from "./cli-hidden.js";
import type { ExitFacts, StopReason } from "./outcome.js";
import type { CliDialect, CliMcpServer, RunConfig } from "./cli-dialect.js";
import { RunLimits } from "./cli-run-limits.js";
import { abortReason, buildOutcome, cancelDetail, StderrTail } from "./cli-run-outcome.js";
import { installExitHook, RunProcesses, signalFromExitCode, sleep } from "./cli-run-processes.js";
import { EventChannel } from "./event-channel.js";
import {
  RunSettings,
  type AgentRun,
  type OutcomeKind,
  type RunEvent,
  type RunOutcome,
  type RunSpec,
} from "./runtime-adapter.js";

export class CliRun<M extends { kind: string }, S> implements AgentRun {
  readonly outcome: Promise<RunOutcome>;
  readonly events: AsyncIterable<RunEvent>;
  private readonly channel: EventChannel<RunEvent>;
  private readonly state: S;
  private readonly log: Logger;
  private readonly startedAt = Date.now();
  private child: StreamingChild | undefined;
  private prepared: PreparedCommand | undefined;
  private readonly processes: RunProcesses;
  private readonly limits: RunLimits;
  private readonly stderr: StderrTail;
  private stop: { reason: StopReason; detail: string } | undefined;
  private cancelRequest: string | undefined;
  private resultSeen = false;
  private resultAfterStop = false;

  constructor(
    private readonly spec: RunSpec,
    private readonly config: RunConfig,
    private readonly dialect: CliDialect<M, S>,
  ) {
    this.state = dialect.newState();
    this.channel = new EventChannel(config.maxBufferedEvents);
    this.events = this.channel;
    this.log = config.log.child({ cwd: spec.cwd, resume: spec.resumeSessionId ?? null });
    this.processes = new RunProcesses({
      log: this.log,
      short: dialect.short,
      killGraceMs: config.killGraceMs,
    });
    this.limits = new RunLimits({
      label: dialect.label,
      path: config.path,
      startTimeoutMs: config.startTimeoutMs,
      sampleIntervalMs: config.sampleIntervalMs,
      stop: (reason, detail) => this.requestStop(reason, detail),
      sample: () => this.processes.sample(),
    });
    this.stderr = new StderrTail(config.stderrTailBytes);
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
    this.processes.killNow();
  }

  private async run(): Promise<RunOutcome> {
    const { spec } = this;
    const settings = RunSettings.safeParse(spec.settings);
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
    const hidden = await hiddenMasks(spec.cwd, dialect.hides ?? []);
    if (hidden.problem) return this.finishEarly("failed", `${hidden.problem}; not running it`);
    if (hidden.masks.length && !sandboxed) {
      return this.finishEarly(
        "failed",
        `the checkout has ${hidden.masks.map((m) => m.path).join(", ")}, which the ${dialect.label} loads whatever it is told (code included); only Tether's sandbox hides them from it, and this run has none`,
      );
    }
    const masks = withHidden(spec.sandbox?.masks, hidden.masks);
    const access = dialect.modelAccess(this.config.baseEnv);
    const tool = spec.lineComments;
    const mcp = tool && lineCommentServer(tool, sandboxed ? IN_SANDBOX.outbox : tool.dir);
    const servers = mcpPlan(spec, sandboxed);
    const images = spec.images ?? [];
    const imagesDir = images.length ? path.dirname(images[0]!.path) : undefined;
    if (images.some((i) => path.dirname(i.path) !== imagesDir))
      return this.finishEarly("failed", "the turn's images are not in one directory");
    // What the model is shown must not be the agent's to change: never a file of the checkout.
    if (imagesDir && !path.relative(spec.cwd, imagesDir).startsWith(".."))
      return this.finishEarly("failed", "the turn's images must be outside the working directory");
    let input = spec.prompt;
    if (dialect.input) {
      try {
        input = await dialect.input(spec.prompt, images);
      } catch (err) {
        return this.finishEarly(
          "failed",
          `could not read the turn's images: ${(err as Error).message}`,
        );
      }
    }
    const args = dialect.args(settings.data, resumeSessionId, {
      sandboxed,
      baseUrl: sandboxed ? access.insideBaseUrl : access.outsideBaseUrl,
      mcp,
      ...(servers.cli.length ? { mcpServers: servers.cli } : {}),
      home: sandboxed ? IN_SANDBOX.home : spec.home,
      ...(images.length
        ? {
            images: sandboxed
              ? images.map((i) => ({
                  ...i,
                  path: path.posix.join(IN_SANDBOX.images, path.basename(i.path)),
                }))
              : images,
          }
        : {}),
    });
    const env = dialect.env(this.config.baseEnv, {
      home: spec.home,
      extra: spec.extraEnv,
      settings: settings.data,
      ...(servers.cli.length ? { mcpServers: servers.cli } : {}),
    });
    try {
      await dialect.beforeStart?.(this.state, spec, resumeSessionId);
    } catch (err) {
      this.log.warn({ err }, "could not read what the session holds before the run");
    }
    let command: Pick<PreparedCommand, "file" | "args" | "env" | "cwd" | "fd3"> = {
      file: this.config.path,
      args,
      env: spec.sandbox ? env : { ...env, ...access.outside },
      cwd: spec.cwd,
      fd3: undefined,
    };
    if (spec.sandbox) {
      for (const name of access.remove) delete env[name];
      const exe = realBinary(this.config.path, env.PATH);
      // bwrap would say "Can't find source path": say what the unsandboxed spawn says instead.
      if (!fs.existsSync(exe)) return this.finishEarly("failed", this.cannotStart("ENOENT"));
      const budget = settings.data.maxBudgetUsd;
      try {
        this.prepared = await spec.sandbox.sandbox.prepare({
          workspace: spec.cwd,
          ...(spec.home ? { home: spec.home } : {}),
          ...(spec.sandbox.origin ? { origin: spec.sandbox.origin } : {}),
          ...(masks ? { masks } : {}),
          readOnly: [
            ...(this.dialect.binds?.(exe) ?? [exe]),
            ...(tool ? readOnlyPaths() : []),
            ...servers.readOnly,
          ],
          ...(servers.hosts.length ? { mcpHosts: servers.hosts } : {}),
          ...(tool ? { outbox: tool.dir } : {}),
          ...(imagesDir ? { images: imagesDir } : {}),
          egress: {
            model: access.endpoint,
            network: spec.sandbox.network,
            waitForBridge: !this.dialect.bootsAfterBridge,
            ...(Object.keys(servers.remotes).length ? { mcpRemotes: servers.remotes } : {}),
            ...(budget !== undefined ? { budgetUsd: budget } : {}),
            // What the agent spends through the proxy on its own (curl with the key the proxy
            // adds) never reaches the CLI's count: once the proxy's count reaches the limit it
            // refuses the next model call, whoever makes it, and the turn ends there. The call
            // that reached it finishes first, so the CLI keeps its answer (as with its own limit).
            onOverBudget: (spentUsd) =>
              this.requestStop(
                "turn_limit",
                `stopped at the agent's per-turn spend limit of $${budget}: the model calls through Tether's proxy came to $${spentUsd.toFixed(4)}`,
              ),
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
      fd3: command.fd3,
      input,
    });
    this.child = child;
    const { exited } = child;
    this.processes.spawned(exited);

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
    this.processes.track(child.pid);
    this.limits.arm(settings.data.timeoutMs, settings.data.stallMs);
    const onAbort = () => this.cancel(abortReason(spec.signal));
    spec.signal?.addEventListener("abort", onAbort, { once: true });
    if (this.cancelRequest !== undefined)
      this.requestStop("cancelled", cancelDetail(this.cancelRequest));

    child.stderr.on("data", (chunk: Buffer) => {
      this.limits.touch();
      this.stderr.keep(chunk);
    });
    // A fork reports a new session id: only a plain resume must report the one it asked for.
    const expected = settings.data.forkSession ? undefined : resumeSessionId;
    const reading = this.readStdout(child.stdout, expected);

    // bwrap reports a child killed by signal N as exit code 128 + N, as a shell does.
    const exit = spec.sandbox ? signalFromExitCode(await exited) : await exited;
    this.processes.exited = true;
    // Whatever the CLI left behind (a command still running in its own session) goes too.
    await this.processes.sweep();
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
    this.limits.clear();

    try {
      await dialect.afterExit?.(this.state, spec);
    } catch (err) {
      this.log.warn({ err }, "could not read what the session holds after the run");
    }
    const classified = dialect.classify({
      resumeSessionId: expected,
      state: this.state,
      exit: this.exitFacts(exit.code, exit.signal),
    });
    return this.finish(
      classified.kind,
      classified.detail,
      { exitCode: exit.code, signal: exit.signal },
      classified.contextOverflow === true,
    );
  }

  private async readStdout(stdout: Readable, resumeSessionId: string | undefined): Promise<void> {
    const parser = this.dialect.parser(this.config.maxLineBytes);
    try {
      for await (const chunk of stdout) {
        this.limits.touch();
        this.limits.stdoutSeen = true;
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
      if (!done && !this.limits.inHandler && this.limits.quietMs() > 2000) {
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
        this.limits.lingerFor(this.config.afterResultGraceMs, () => {
          this.log.warn(`${this.dialect.short} did not exit after its result line; stopping it`);
          void this.processes.terminate();
        });
      }
    }
  }

  private async deliver(event: RunEvent): Promise<void> {
    this.channel.push(event);
    if (!this.spec.onEvent) return;
    this.limits.inHandler = true;
    try {
      await this.spec.onEvent(event);
    } catch (err) {
      this.log.error({ err, event: event.type }, "onEvent handler failed; the run goes on");
    } finally {
      this.limits.inHandler = false;
      // Time spent in the caller's handler is not the CLI being silent.
      this.limits.touch();
    }
  }

  private requestStop(reason: StopReason, detail: string): void {
    if (this.processes.exited || this.stop) return;
    this.stop = { reason, detail };
    this.log.info({ reason, detail, pid: this.pid }, `stopping ${this.dialect.short} run`);
    void this.processes.terminate();
  }

  private exitFacts(exitCode: number | null, signal: string | null): ExitFacts {
    return {
      exitCode,
      signal,
      stderrTail: this.stderr.text(),
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
    contextOverflow = false,
  ): RunOutcome {
    this.limits.clear();
    void this.prepared?.dispose();
    this.channel.close();
    const outcome = buildOutcome(this.dialect, this.state, {
      kind,
      detail,
      contextOverflow,
      exit,
      // A fork's new id is its session; a plain resume's must be the one asked for.
      asked: this.spec.settings.forkSession ? undefined : this.spec.resumeSessionId,
      startedAt: this.startedAt,
      stderrTail: this.stderr.text(),
      parseCounts: this.parseCounts,
    });
    // The proxy saw every model call of the sandbox, the agent's own included; the CLI prices
    // its own calls from Anthropic's current list. The larger is the turn's cost: neither
    // undercounts what the other saw.
    const metered = this.prepared?.egress?.stats().spentUsd ?? 0;
    if (metered > outcome.usage.costUsd) {
      if (metered > outcome.usage.costUsd + 0.0001)
        this.log.info(
          { cliUsd: outcome.usage.costUsd, proxyUsd: metered },
          "the model calls through the proxy cost more than the CLI reported; recording the proxy's count",
        );
      outcome.usage.costUsd = metered;
    }
    if (this.channel.dropped > 0) {
      this.log.warn({ dropped: this.channel.dropped }, "events were dropped: nobody read them");
    }
    this.log.info(
      {
        kind,
        detail,
        sessionId: outcome.sessionId,
        toolRan: outcome.toolRan,
        exitCode: exit.exitCode,
        signal: exit.signal,
      },
      `${this.dialect.short} run finished`,
    );
    return outcome;
  }
}

/**
 * Where each of the operator's MCP servers the agent was given runs, and how the CLI reaches it.
 * Sandboxed, no secret of theirs goes in: a remote server is the egress proxy's `/mcp/<name>`
 * (the proxy adds its headers), a stdio server with an `env` runs in a sandbox of its own behind
 * a socket (`socat` bridges the CLI's stdio to it), and one without `env` runs inside, its
 * command's paths shown read-only. Unsandboxed (TETHER_SANDBOX=off, or an adapter test), the CLI
 * gets them as the operator's file has them: nothing is kept from the agent there anyway.
 */
function mcpPlan(
  spec: RunSpec,
  sandboxed: boolean,
): {
  cli: CliMcpServer[];
  hosts: NonNullable<SandboxRun["mcpHosts"]>;
  remotes: Record<string, McpRemote>;
  readOnly: string[];
} {
  const plan = {
    cli: [] as CliMcpServer[],
    hosts: [] as NonNullable<SandboxRun["mcpHosts"]>,
    remotes: {} as Record<string, McpRemote>,
    readOnly: [] as string[],
  };
  for (const s of spec.mcpServers ?? []) {
    const { name } = s;
    if (s.type === "http") {
      if (!sandboxed) plan.cli.push({ name, type: "http", url: s.url, headers: s.headers });
      else {
        plan.remotes[name] = { url: new URL(s.url), headers: s.headers };
        plan.cli.push({ name, type: "http", url: `${BRIDGE_URL}/mcp/${name}`, headers: {} });
      }
    } else if (!sandboxed) {
      plan.cli.push({ name, type: "stdio", command: s.command, args: s.args, env: s.env });
    } else if (Object.keys(s.env).length > 0) {
      plan.hosts.push({ name, server: s });
      const args = ["-", `UNIX-CONNECT:${mcpSocketPath(name)}`];
      plan.cli.push({ name, type: "stdio", command: "socat", args, env: {} });
    } else {
      plan.readOnly.push(...mcpServerPaths(s));
      plan.cli.push({ name, type: "stdio", command: s.command, args: s.args, env: {} });
    }
  }
  return plan;
}

/** The binary's real path (after PATH lookup and links): what the sandbox binds and runs. */
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
