/**
 * git in a key's workspace, run inside the sandbox. The checkout is the agent's: its
 * `.git/config` may define filters or an fsmonitor that run programs, `.git` may be a link to
 * somewhere else, refs may be links. In the sandbox all of that reaches only the workspace
 * itself. No network and no token: the workspace fetches from the repository's mirror, bound
 * read-only at /run/tether/origin.git.
 *
 * Each step is one sandbox running a short sh script of git commands, so a turn pays for one
 * sandbox start per step, not per git command. Scripts print `key=value` lines (values are
 * object ids, ref names, counts: never a newline) and, last, raw `git status` output.
 */
import path from "node:path";
import type { Logger } from "../log.js";
import { SYSTEM_PATH } from "../process/child-env.js";
import { runCommand } from "../process/run-command.js";
import { IN_SANDBOX } from "../sandbox/bwrap-args.js";
import type { Sandbox } from "../sandbox/sandbox.js";
import { GIT_MAINTENANCE, GIT_SAFETY } from "./git.js";

export interface ScriptResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  stoppedBy: "timeout" | "cancelled" | undefined;
  startError: string | undefined;
}

export interface SandboxedGit {
  /** Run `script` (sh) with `args` in the workspace at `dir`, the mirror at `origin` as $ORIGIN. */
  run(
    dir: string,
    script: string,
    args: string[],
    o: {
      origin?: string;
      signal?: AbortSignal | undefined;
      timeoutMs?: number;
      /** Let git's housekeeping run, in the foreground (gc --auto after a turn). */
      maintenance?: boolean;
      /** A host directory the script may write into, as $OUT (read-write at /run/tether/out). */
      outbox?: string;
      /** More environment (a commit's identity). */
      env?: Record<string, string>;
      /** More `-c` pairs on top of the safety ones, as for GIT_SAFETY. */
      config?: string[];
    },
  ): Promise<ScriptResult>;
}

/** git -c pairs as environment (GIT_CONFIG_COUNT): they beat every config file, for every git the script runs. */
function configEnv(pairs: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  const values = pairs.filter((_, i) => i % 2 === 1);
  values.forEach((kv, i) => {
    const eq = kv.indexOf("=");
    env[`GIT_CONFIG_KEY_${i}`] = kv.slice(0, eq);
    env[`GIT_CONFIG_VALUE_${i}`] = kv.slice(eq + 1);
  });
  env.GIT_CONFIG_COUNT = String(values.length);
  return env;
}

export function sandboxedGit(opts: {
  sandbox: Sandbox;
  log: Logger;
  timeoutMs?: number;
}): SandboxedGit {
  return {
    async run(dir, script, args, o) {
      const sandboxed = opts.sandbox.sandboxed;
      const env: Record<string, string> = {
        PATH: SYSTEM_PATH,
        LC_ALL: "C",
        GIT_TERMINAL_PROMPT: "0",
        // The agent's own HOME never counts; Tether's git reads the checkout's config and no other.
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        // A checkout without its .git must fail, not find a repository further up (with the
        // sandbox off, the workspace root may sit inside another checkout).
        GIT_CEILING_DIRECTORIES: sandboxed ? "/" : path.dirname(dir),
        ...o.env,
        ...configEnv([...(o.maintenance ? GIT_MAINTENANCE : GIT_SAFETY), ...(o.config ?? [])]),
        ORIGIN: o.origin ? (sandboxed ? IN_SANDBOX.origin : o.origin) : "",
        OUT: o.outbox ? (sandboxed ? IN_SANDBOX.outbox : o.outbox) : "",
      };
      if (!sandboxed) env.HOME = "/nonexistent";
      const prepared = await opts.sandbox.prepare({
        workspace: dir,
        ...(o.origin ? { origin: o.origin } : {}),
        ...(o.outbox ? { outbox: o.outbox } : {}),
        env,
        command: ["/bin/sh", "-c", script, "tether-git", ...args],
      });
      const started = Date.now();
      try {
        const r = await runCommand(prepared.file, prepared.args, {
          cwd: prepared.cwd,
          env: prepared.env,
          fd3: prepared.fd3,
          timeoutMs: o.timeoutMs ?? opts.timeoutMs ?? 10 * 60_000,
          signal: o.signal,
        });
        opts.log.debug(
          { step: args[0], exitCode: r.exitCode, ms: Date.now() - started, sandboxed },
          "git in the workspace",
        );
        return r;
      } finally {
        await prepared.dispose();
      }
    },
  };
}

/** `key=value` lines up to the `@status` marker, and the raw status output after it. */
export function parseReport(stdout: string): { values: Map<string, string>; status: string } {
  const marker = stdout.indexOf("@status\n");
  const head = marker >= 0 ? stdout.slice(0, marker) : stdout;
  const values = new Map<string, string>();
  for (const line of head.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) values.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return { values, status: marker >= 0 ? stdout.slice(marker + "@status\n".length) : "" };
}
