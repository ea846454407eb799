/**
 * The Codex CLI (`@openai/codex`, pinned) as a CliAdapter: the same run engine as Claude's
 * (src/agent-cli/cli-run.ts) with Codex's dialect (a CliDialect, src/agent-cli/cli-dialect.ts).
 * Facts it rests on: docs/codex-cli-facts.md.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { createDialectCli } from "../agent-cli/cli-adapter.js";
import type { CliDialect, CliRunOptions } from "../agent-cli/cli-dialect.js";
import { probeOnce, probeVersionAndHelp, runProbe } from "../agent-cli/probe-cli.js";
import type { CliAdapter, CliProbe, RunSpec } from "../agent-cli/runtime-adapter.js";
import { buildCodexArgs, buildCodexEnv, CODEX_CATALOG } from "./codex-args.js";
import {
  classifyCodex,
  codexEarlyStop,
  codexToolRan,
  codexUsage,
  newCodexEvidence,
  observeCodex,
  type CodexEvidence,
} from "./codex-outcome.js";
import { CodexStreamParser, type CodexMessage } from "./codex-stream.js";
import { codexModelAccess } from "./model-endpoint.js";
import { findRollout, readRollout, THREAD_ID } from "./rollout.js";

/** Rust target triple of the binary inside each platform package (the launcher's table). */
const TARGETS: Record<string, { pkg: string; triple: string }> = {
  "linux-x64": { pkg: "@openai/codex-linux-x64", triple: "x86_64-unknown-linux-musl" },
  "linux-arm64": { pkg: "@openai/codex-linux-arm64", triple: "aarch64-unknown-linux-musl" },
  "darwin-x64": { pkg: "@openai/codex-darwin-x64", triple: "x86_64-apple-darwin" },
  "darwin-arm64": { pkg: "@openai/codex-darwin-arm64", triple: "aarch64-apple-darwin" },
};

/**
 * The Codex binary: TETHER_CODEX_PATH; else the native binary in the pinned package's platform
 * dependency (`vendor/<triple>/bin/codex`, called directly: the launcher only forwards to it);
 * else plain `codex` (a run then says it could not be found).
 */
export function resolveCodexPath(env: { TETHER_CODEX_PATH?: string | undefined }): string {
  if (env.TETHER_CODEX_PATH) return env.TETHER_CODEX_PATH;
  const target = TARGETS[`${process.platform}-${process.arch}`];
  if (target) {
    try {
      const require = createRequire(import.meta.url);
      const dir = path.dirname(require.resolve(`${target.pkg}/package.json`));
      const bin = path.join(dir, "vendor", target.triple, "bin", "codex");
      fs.accessSync(bin, fs.constants.X_OK);
      return bin;
    } catch {
      /* not installed */
    }
  }
  return "codex";
}

/** Where the thread's rollout is for this run: `$CODEX_HOME`, by default `$HOME/.codex`. */
function codexHomeOf(spec: RunSpec): string {
  return spec.extraEnv?.CODEX_HOME ?? path.join(spec.home ?? os.homedir(), ".codex");
}

export const codexDialect: CliDialect<CodexMessage, CodexEvidence> = {
  label: "Codex CLI",
  short: "codex",
  installHint: "set TETHER_CODEX_PATH or install @openai/codex",
  sessionId: THREAD_ID,
  args: (settings, resumeSessionId, where) =>
    buildCodexArgs(settings, resumeSessionId, {
      baseUrl: where.baseUrl ?? "https://api.openai.com/v1",
      // A plan turn (`/plan`): Codex's own read-only sandbox, inside Tether's, so the agent's
      // commands can read the checkout and write nothing.
      sandboxMode:
        settings.permissionMode === "plan"
          ? "read-only"
          : where.sandboxed
            ? "danger-full-access"
            : "workspace-write",
      mcp: where.mcp,
      servers: where.mcpServers,
      catalog: `${where.home ?? os.homedir()}/${CODEX_CATALOG}`,
      images: where.images?.map((i) => i.path),
    }),
  env: buildCodexEnv,
  modelAccess: codexModelAccess,
  parser: (maxLineBytes) => new CodexStreamParser(maxLineBytes),
  newState: newCodexEvidence,
  async beforeStart(state, spec, resumeSessionId) {
    state.model = spec.settings.model ?? null;
    if (resumeSessionId === undefined) return;
    const found = await findRollout(codexHomeOf(spec), resumeSessionId);
    if (found) state.before = await readRollout(found.file);
  },
  async afterExit(state, spec) {
    if (!state.threadId) return;
    const found = await findRollout(codexHomeOf(spec), state.threadId);
    if (found) state.after = await readRollout(found.file);
  },
  // The binary's package directory (vendor/<triple>/): its bundled rg and resources beside it.
  binds: (exe) =>
    path.basename(path.dirname(exe)) === "bin" ? [path.dirname(path.dirname(exe))] : [exe],
  observe: observeCodex,
  earlyStop: codexEarlyStop,
  isFinal: (m) => m.kind === "turn_completed" || m.kind === "turn_failed",
  classify: classifyCodex,
  sessionOf: (state) => state.threadId,
  resultText: (state) => state.lastText,
  toolRan: codexToolRan,
  usage: codexUsage,
  redactArgs: (args) =>
    args.map((a) =>
      a.startsWith("developer_instructions=")
        ? `developer_instructions=(${a.length} characters)`
        : a,
    ),
};

export type CodexCliOptions = Partial<CliRunOptions>;

/** The Codex CLI as a CliAdapter. */
export function createCodexCli(opts: CodexCliOptions = {}): CliAdapter {
  const file = opts.path ?? resolveCodexPath({ TETHER_CODEX_PATH: process.env.TETHER_CODEX_PATH });
  const baseEnv = opts.baseEnv ?? process.env;
  let catalog: Promise<string | null> | undefined;
  const dialect: typeof codexDialect = {
    ...codexDialect,
    async beforeStart(state, spec, resumeSessionId) {
      await codexDialect.beforeStart?.(state, spec, resumeSessionId);
      const dir = spec.lineComments?.dir ?? (spec.mcpServers?.length ? spec.home : undefined);
      if (!dir) return;
      catalog ??= catalogWithoutToolSearch(file, baseEnv).then((c) => {
        if (c === null) catalog = undefined;
        return c;
      });
      const text = await catalog;
      if (text) await fs.promises.writeFile(path.join(dir, CODEX_CATALOG), text);
    },
  };
  const probe = probeOnce(() => probeCodex(file, baseEnv));
  return createDialectCli("codex", dialect, { ...opts, path: file, baseEnv }, probe);
}

/**
 * The binary's model catalog (`codex debug models`) with `supports_search_tool` off for every
 * model: with it on (every model of 0.169.0's catalog), Codex offers MCP tools only through
 * `tool_search`, and the line-comment tool would not be in the request. Null when the binary
 * did not print a catalog.
 */
export async function catalogWithoutToolSearch(
  file: string,
  baseEnv: Record<string, string | undefined>,
): Promise<string | null> {
  const r = await runProbe(file, ["debug", "models"], baseEnv);
  if (r.failed) return null;
  try {
    const parsed = JSON.parse(r.stdout) as { models?: Array<Record<string, unknown>> };
    if (!Array.isArray(parsed.models)) return null;
    for (const m of parsed.models) m.supports_search_tool = false;
    return JSON.stringify(parsed);
  } catch {
    return null;
  }
}

/** `codex --version` ("codex-cli 0.169.0") and whether `codex exec --help` offers `resume`. */
export function probeCodex(
  file: string,
  baseEnv: Record<string, string | undefined>,
): Promise<CliProbe> {
  return probeVersionAndHelp(file, (args) => runProbe(file, args, baseEnv), {
    args: ["exec", "--help"],
    resumes: (help) => /^\s+resume\b/m.test(help.stdout),
  });
}
