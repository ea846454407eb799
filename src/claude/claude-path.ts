import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/** Where the Claude binary came from. */
export type ClaudePathSource = "env" | "bundled" | "path" | "unresolved";

export interface ClaudePathLookup {
  path: string;
  source: ClaudePathSource;
}

/** The edges resolution touches, replaceable in tests. */
export interface ClaudePathDeps {
  platform: NodeJS.Platform;
  arch: string;
  /** True on Linux with musl libc (Alpine). */
  musl: boolean;
  /** require.resolve from Tether's own location; throws when the package is not installed. */
  resolvePackageJson: (pkg: string) => string;
  isExecutable: (file: string) => boolean;
  /** The PATH to search last. */
  pathEnv: string | undefined;
}

const PACKAGE_PREFIX = "@anthropic-ai/claude-code";

/**
 * The Claude executable to run: TETHER_CLAUDE_PATH when set; else the native binary of the
 * pinned `@anthropic-ai/claude-code` platform package (its launcher's postinstall does not run
 * here, so the launcher itself is a stub); else `claude` found on PATH. When nothing is found
 * the answer is plain `claude`, and starting a run says it could not be found.
 */
export function lookupClaudePath(
  env: { TETHER_CLAUDE_PATH?: string | undefined },
  deps: ClaudePathDeps = defaultDeps(),
): ClaudePathLookup {
  if (env.TETHER_CLAUDE_PATH) return { path: env.TETHER_CLAUDE_PATH, source: "env" };

  const pkg = platformPackage(deps);
  if (pkg) {
    try {
      const dir = path.dirname(deps.resolvePackageJson(`${pkg}/package.json`));
      const bin = path.join(dir, deps.platform === "win32" ? "claude.exe" : "claude");
      if (deps.isExecutable(bin)) return { path: bin, source: "bundled" };
    } catch {
      /* not installed for this platform: fall through to PATH */
    }
  }

  const names = deps.platform === "win32" ? ["claude.exe", "claude.cmd"] : ["claude"];
  for (const dir of (deps.pathEnv ?? "").split(path.delimiter)) {
    if (!dir) continue;
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (deps.isExecutable(candidate)) return { path: candidate, source: "path" };
    }
  }
  return { path: "claude", source: "unresolved" };
}

/** The Claude executable to run (see lookupClaudePath). */
export function resolveClaudePath(
  env: { TETHER_CLAUDE_PATH?: string | undefined },
  deps?: ClaudePathDeps,
): string {
  return lookupClaudePath(env, deps).path;
}

/** The platform package's name, e.g. @anthropic-ai/claude-code-linux-x64; undefined if none. */
export function platformPackage(
  deps: Pick<ClaudePathDeps, "platform" | "arch" | "musl">,
): string | undefined {
  const supported: Record<string, string[]> = {
    darwin: ["arm64", "x64"],
    linux: ["arm64", "x64"],
    win32: ["arm64", "x64"],
    freebsd: ["arm64", "x64"],
  };
  if (!supported[deps.platform]?.includes(deps.arch)) return undefined;
  const musl = deps.platform === "linux" && deps.musl ? "-musl" : "";
  return `${PACKAGE_PREFIX}-${deps.platform}-${deps.arch}${musl}`;
}

function defaultDeps(): ClaudePathDeps {
  const require = createRequire(import.meta.url);
  return {
    platform: process.platform,
    arch: process.arch,
    musl: detectMusl(),
    resolvePackageJson: (pkg) => require.resolve(pkg),
    isExecutable,
    pathEnv: process.env.PATH,
  };
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function detectMusl(): boolean {
  if (process.platform !== "linux") return false;
  const report = process.report?.getReport() as
    { header?: { glibcVersionRuntime?: string } } | undefined;
  return report !== undefined && report.header?.glibcVersionRuntime === undefined;
}
