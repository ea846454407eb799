import fs from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { buildChildEnv } from "../process/child-env.js";
import type { CliCapabilities } from "./runtime-adapter.js";

/** Runs the binary with some arguments; replaceable in tests. */
export type ProbeExec = (
  file: string,
  args: string[],
) => Promise<{
  stdout: string;
  stderr: string;
  exitCode: number | undefined;
  failed: boolean;
  error?: string;
}>;

const PROBE_TIMEOUT_MS = 15_000;

/**
 * Version and resume support of a CLI binary, from `--version` and `--help`. Cached per binary
 * (resolved path + size + mtime), so a binary replaced in place is probed again. Failures are
 * not cached: the next call tries again.
 */
export async function probeCli(
  file: string,
  opts: { exec?: ProbeExec; env?: Record<string, string | undefined> } = {},
): Promise<CliCapabilities> {
  const resolved = resolveOnPath(file, opts.env?.PATH ?? process.env.PATH);
  const key = cacheKey(resolved);
  if (key) {
    const hit = cache.get(key);
    if (hit) return hit;
  }
  const exec = opts.exec ?? defaultExec(opts.env ?? process.env);
  const probe = (async (): Promise<CliCapabilities> => {
    const version = await exec(resolved, ["--version"]);
    if (version.failed) {
      return {
        path: resolved,
        version: null,
        canResume: false,
        error: `could not run ${resolved} --version: ${version.error || version.stderr.trim() || "failed"}`,
      };
    }
    const help = await exec(resolved, ["--help"]);
    const text = `${help.stdout}\n${help.stderr}`;
    return {
      path: resolved,
      version: parseVersion(version.stdout) ?? parseVersion(version.stderr),
      canResume: offersResume(text),
      ...(help.failed
        ? { error: `could not run ${resolved} --help: ${help.error || "failed"}` }
        : {}),
    };
  })();
  if (key) cache.set(key, probe);
  const caps = await probe;
  if (key && caps.error) cache.delete(key);
  return caps;
}

const cache = new Map<string, Promise<CliCapabilities>>();

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

function defaultExec(source: Record<string, string | undefined>): ProbeExec {
  return async (file, args) => {
    const r = await execa(file, args, {
      env: buildChildEnv(source),
      extendEnv: false,
      reject: false,
      timeout: PROBE_TIMEOUT_MS,
      stdin: "ignore",
      maxBuffer: 1024 * 1024,
    });
    return {
      stdout: String(r.stdout ?? ""),
      stderr: String(r.stderr ?? ""),
      exitCode: r.exitCode,
      failed: r.failed,
      ...(r.failed ? { error: r.shortMessage } : {}),
    };
  };
}
