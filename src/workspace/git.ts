/**
 * git as Tether runs it on the host: only in repositories Tether alone writes (the mirrors).
 * It reads no system or global config and uses a HOME of its own, so nothing on the machine (a
 * `~/.gitconfig` with an `http.proxy`, a credential helper, an `url.*.insteadOf`) steers where
 * the token goes; hooks and fsmonitor are off; the token is only in the environment of commands
 * that talk to GitHub, scoped to its host. git in an agent's workspace never runs here: it runs
 * in the sandbox (sandboxed-git.ts), where the checkout's own config can harm nothing.
 */
import type { Logger } from "../log.js";
import { NETWORK_NAMES, passEnv, SYSTEM_PATH } from "../process/child-env.js";
import { runCommand, type CommandResult } from "../process/run-command.js";
import { gitAuthEnv, redactToken } from "../github/git-auth.js";
import { gitFailure, WorkspaceError, type FailureContext, type Step } from "./errors.js";

/**
 * Passed through from the runner's environment: PATH, the way to the network and its TLS roots
 * (the children's shared names, child-env.ts), and git's own proxy and TLS settings.
 */
const PASS_ENV = [
  "PATH",
  ...NETWORK_NAMES,
  "ALL_PROXY",
  "all_proxy",
  "GIT_SSL_CAINFO",
  "GIT_SSL_CAPATH",
];

/** Every git command Tether runs gets these first (they beat any config file). */
export const GIT_SAFETY = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  // git's housekeeping would start after fetch and merge, on the turn's hot path.
  "-c",
  "maintenance.auto=false",
  "-c",
  "gc.auto=0",
];

/**
 * Instead of GIT_SAFETY when git's housekeeping is wanted (`gc --auto` in a mirror or a workspace,
 * after turns): hooks and the fsmonitor stay off, and gc runs in the foreground, not detached.
 */
export const GIT_MAINTENANCE = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "gc.autoDetach=false",
];

/** The environment of Tether's own git: no config but Tether's, a HOME of its own. */
export function hostGitEnv(
  home: string,
  source: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {
    LC_ALL: "C",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    HOME: home,
    XDG_CONFIG_HOME: home,
    ...passEnv(source, PASS_ENV),
  };
  env.PATH ||= SYSTEM_PATH;
  return env;
}

export interface HostGitOptions {
  home: string;
  log: Logger;
  gitPath?: string;
  timeoutMs?: number;
}

export interface GitCall {
  cwd: string;
  step: Step;
  ctx: FailureContext;
  /** Talk to GitHub with this token (clone URL's origin only). */
  auth?: { cloneUrl: string; token: string };
  signal?: AbortSignal | undefined;
  allowFailure?: boolean;
  /** Let git's housekeeping run (in the foreground); off otherwise. */
  maintenance?: boolean;
  /** Written to git's stdin (`cat-file --batch`, a commit message). */
  input?: string;
  /** Most bytes of stdout kept (the rest is cut off); default 16 MiB. */
  maxBuffer?: number;
  /** More environment (a commit's identity). */
  env?: Record<string, string>;
  /** More `-c` pairs, after the safety ones. */
  config?: string[];
}

export interface HostGit {
  (args: string[], call: GitCall): Promise<CommandResult>;
  /** The same, with stdout as bytes: file contents read from the mirror. */
  bytes(args: string[], call: GitCall): Promise<CommandResult<Buffer>>;
}

export function hostGit(opts: HostGitOptions): HostGit {
  const base = hostGitEnv(opts.home);
  const gitPath = opts.gitPath ?? "git";
  const timeoutMs = opts.timeoutMs ?? 10 * 60_000;
  async function run(args: string[], call: GitCall): Promise<CommandResult>;
  async function run(args: string[], call: GitCall, bytes: true): Promise<CommandResult<Buffer>>;
  async function run(
    args: string[],
    call: GitCall,
    bytes?: true,
  ): Promise<CommandResult<string | Buffer>> {
    const env = {
      ...base,
      ...call.env,
      ...(call.auth ? gitAuthEnv(call.auth.cloneUrl, call.auth.token) : {}),
    };
    const safety = call.maintenance ? GIT_MAINTENANCE : GIT_SAFETY;
    const started = Date.now();
    const command = {
      cwd: call.cwd,
      env,
      timeoutMs,
      signal: call.signal,
      ...(call.input === undefined ? {} : { input: call.input }),
      ...(call.maxBuffer === undefined ? {} : { maxBuffer: call.maxBuffer }),
    };
    const argv = [...safety, ...(call.config ?? []), ...args];
    const r = bytes
      ? await runCommand(gitPath, argv, { ...command, encoding: "buffer" })
      : await runCommand(gitPath, argv, command);
    const token = call.auth?.token;
    opts.log.debug(
      { git: args.slice(0, 2), exitCode: r.exitCode, ms: Date.now() - started },
      "git",
    );
    const ctx = { ...call.ctx, timeoutMs };
    if (r.stoppedBy) throw gitFailure(ctx, call.step, redactToken(r.stderr, token), r.stoppedBy);
    if (r.startError) {
      const why = redactToken(r.startError, token);
      if (/ENOENT/.test(why))
        throw new WorkspaceError(
          "git-failed",
          call.ctx.repo,
          `could not ${call.step} ${call.ctx.repo}: the runner could not start git; is it installed?`,
          { detail: why },
        );
      throw gitFailure(ctx, call.step, why, "git-failed");
    }
    if (r.exitCode !== 0 && !call.allowFailure) {
      const stderr = redactToken(r.stderr, token);
      opts.log.warn(
        { git: args[0], exitCode: r.exitCode, stderr: stderr.slice(-2000) },
        "git failed",
      );
      throw gitFailure(ctx, call.step, stderr, undefined, r.exitCode);
    }
    return r;
  }
  return Object.assign((args: string[], call: GitCall) => run(args, call), {
    bytes: (args: string[], call: GitCall) => run(args, call, true),
  });
}
