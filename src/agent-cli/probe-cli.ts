import fs from "node:fs";
import path from "node:path";
import { buildChildEnv } from "../process/child-env.js";
import { runCommand } from "../process/run-command.js";
import type { CliProbe } from "./runtime-adapter.js";

/** What one probe run printed, and how it ended. */
export interface ProbeResult {
  stdout: string;
  stderr: string;
  exitCode: number | undefined;
  failed: boolean;
  /** What went wrong, naming the command, when it failed. */
  error?: string;
}

/** Runs the binary with some arguments; replaceable in tests. */
export type ProbeExec = (file: string, args: string[]) => Promise<ProbeResult>;

const PROBE_TIMEOUT_MS = 15_000;

/**
 * Runs a CLI binary to ask it something (`--version`, `--help`), for every CLI's probe: the
 * children's environment built from `source` (with the CLI's own settings `prefixes`), no
 * stdin, 15 s, 1 MiB of output.
 */
export async function runProbe(
  file: string,
  args: string[],
  source: Record<string, string | undefined>,
  prefixes: readonly string[] = [],
): Promise<ProbeResult> {
  const r = await runCommand(file, args, {
    cwd: process.cwd(),
    env: buildChildEnv(source, { prefixes }),
    timeoutMs: PROBE_TIMEOUT_MS,
    maxBuffer: 1024 * 1024,
    // SIGKILL 5 s after the SIGTERM at the timeout, as execa's own timeout did.
    killGraceMs: 5000,
  });
  return {
    stdout: r.stdout,
    stderr: r.stderr,
    exitCode: r.exitCode === -1 ? undefined : r.exitCode,
    failed: r.failure !== undefined,
    ...(r.failure !== undefined ? { error: r.failure } : {}),
  };
}

/**
 * Version and resume support of a CLI binary, from `--version` and `--help`. Cached per binary
 * (resolved path + size + mtime), so a binary replaced in place is probed again. Failures are
 * not cached: the next call tries again.
 */
export async function probeCli(
  file: string,
  opts: {
    exec?: ProbeExec;
    env?: Record<string, string | undefined>;
    /** The CLI's own settings prefixes (its registry entry's childEnvPrefixes). */
    prefixes?: readonly string[];
  } = {},
): Promise<CliProbe> {
  const resolved = resolveOnPath(file, opts.env?.PATH ?? process.env.PATH);
  const key = cacheKey(resolved);
  if (key) {
    const hit = cache.get(key);
    if (hit) return hit;
  }
  const exec = opts.exec ?? defaultExec(opts.env ?? process.env, opts.prefixes ?? []);
  const probe = probeVersionAndHelp(resolved, (args) => exec(resolved, args), {
    args: ["--help"],
    resumes: (help) => offersResume(`${help.stdout}\n${help.stderr}`),
  });
  if (key) cache.set(key, probe);
  const caps = await probe;
  if (key && caps.error) cache.delete(key);
  return caps;
}

const cache = new Map<string, Promise<CliProbe>>();

/**
 * Every CLI's probe: `<file> --version`, then its help command (`help.args`); the version, and
 * whether the help offers a resume (`help.resumes`). A failure says which command failed.
 */
export async function probeVersionAndHelp(
  file: string,
  run: (args: string[]) => Promise<ProbeResult>,
  help: { args: string[]; resumes: (printed: ProbeResult) => boolean },
): Promise<CliProbe> {
  const version = await run(["--version"]);
  if (version.failed) {
    return {
      path: file,
      version: null,
      canResume: false,
      error: `could not run ${file} --version: ${version.error || version.stderr.trim() || "failed"}`,
    };
  }
  const helped = await run(help.args);
  return {
    path: file,
    version: parseVersion(version.stdout) ?? parseVersion(version.stderr),
    canResume: help.resumes(helped),
    ...(helped.failed
      ? { error: `could not run ${file} ${help.args.join(" ")}: ${helped.error || "failed"}` }
      : {}),
  };
}

/**
 * A probe asked once and its answer kept, for a CLI's adapter; a failed one is asked again at the
 * next call (the binary may be installed by then).
 */
export function probeOnce(probe: () => Promise<CliProbe>): () => Promise<CliProbe> {
  let kept: Promise<CliProbe> | undefined;
  return () =>
    (kept ??= probe().then((c) => {
      if (c.error) kept = undefined;
      return c;
    }));
}

/** Forget every cached probe (tests). */
export function clearProbeCache(): void {
  cache.clear();
}

/** The first dotted version number in the text, e.g. "2.1.197 (Claude Code)" → "2.1.197". */
export function parseVersion(text: string): string | null {
  return /(?<![\d.])(\d+\.\d+\.\d+(?:-[\w.]+)?)/.exec(text)?.[1] ?? null;
}

/** `--help` lists a `--resume` option (e.g. "-r, --resume [value]"). */
export function offersResume(helpText: string): boolean {
  return /(^|[\s,])--resume(?![\w-])/m.test(helpText);
}

function cacheKey(file: string): string | undefined {
  try {
    const real = fs.realpathSync(file);
    const stat = fs.statSync(real);
    return `${real}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return undefined;
  }
}

/** A bare name is looked up on PATH, as spawning it would. */
function resolveOnPath(file: string, pathEnv: string | undefined): string {
  if (file.includes("/") || file.includes(path.sep)) return path.resolve(file);
  for (const dir of (pathEnv ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, file);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      /* next */
    }
  }
  return file;
}

function defaultExec(
  source: Record<string, string | undefined>,
  prefixes: readonly string[],
): ProbeExec {
  return (file, args) => runProbe(file, args, source, prefixes);
}
