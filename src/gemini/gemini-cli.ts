/**
 * Gemini CLI (`@google/gemini-cli`, pinned) as a CliAdapter: the same run engine as Claude's and
 * Codex's (src/agent-cli/cli-run.ts) with Gemini's dialect (a CliDialect,
 * src/agent-cli/cli-dialect.ts). Facts it rests on: docs/gemini-cli-facts.md.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { createDialectCli } from "../agent-cli/cli-adapter.js";
import type { CliDialect, CliRunOptions } from "../agent-cli/cli-dialect.js";
import { probeCli } from "../agent-cli/probe-cli.js";
import type { CliAdapter, CliProbe } from "../agent-cli/runtime-adapter.js";
import { buildGeminiArgs, buildGeminiEnv, writeGeminiHome } from "./gemini-args.js";
import {
  classifyGemini,
  geminiEarlyStop,
  geminiToolRan,
  geminiUsage,
  newGeminiEvidence,
  observeGemini,
  type GeminiEvidence,
} from "./gemini-outcome.js";
import { GeminiStreamParser, type GeminiMessage } from "./gemini-stream.js";
import { geminiModelAccess } from "./model-endpoint.js";
import { findSessionFile, GEMINI_SESSION_ID, readSessionFile } from "./session-files.js";

/**
 * The CLI: TETHER_GEMINI_PATH; else the pinned package's `bundle/gemini.js` (a node script,
 * `#!/usr/bin/env node`, run by the system's node); else plain `gemini`.
 */
export function resolveGeminiPath(env: { TETHER_GEMINI_PATH?: string | undefined }): string {
  if (env.TETHER_GEMINI_PATH) return env.TETHER_GEMINI_PATH;
  try {
    const require = createRequire(import.meta.url);
    const dir = path.dirname(require.resolve("@google/gemini-cli/package.json"));
    const bin = path.join(dir, "bundle", "gemini.js");
    fs.accessSync(bin, fs.constants.X_OK);
    return bin;
  } catch {
    return "gemini";
  }
}

export const geminiDialect: CliDialect<GeminiMessage, GeminiEvidence> = {
  label: "Gemini CLI",
  short: "gemini",
  installHint: "set TETHER_GEMINI_PATH or install @google/gemini-cli",
  sessionId: GEMINI_SESSION_ID,
  args: (settings, resumeSessionId, where) =>
    buildGeminiArgs(
      settings,
      resumeSessionId,
      where.images?.map((i) => i.path),
    ),
  env: buildGeminiEnv,
  modelAccess: geminiModelAccess,
  parser: (maxLineBytes) => new GeminiStreamParser(maxLineBytes),
  newState: newGeminiEvidence,
  async beforeStart(state, spec, resumeSessionId) {
    state.model = spec.settings.model ?? null;
    // Only a HOME Tether made gets Tether's settings; never the operator's own ~/.gemini.
    if (!spec.home) return;
    await writeGeminiHome(spec.home, spec.settings);
    if (resumeSessionId === undefined) return;
    const found = await findSessionFile(spec.home, resumeSessionId);
    if (found) state.before = await readSessionFile(found.file);
  },
  async afterExit(state, spec) {
    if (!state.sessionId || !spec.home) return;
    const found = await findSessionFile(spec.home, state.sessionId);
    if (found) state.after = await readSessionFile(found.file);
  },
  // The whole package: the launcher imports its chunks, and reads its bundled policies and docs.
  binds: (exe) =>
    path.basename(path.dirname(exe)) === "bundle" ? [path.dirname(path.dirname(exe))] : [exe],
  observe: observeGemini,
  earlyStop: geminiEarlyStop,
  isFinal: (m) => m.kind === "result",
  classify: classifyGemini,
  sessionOf: (state) => state.sessionId,
  resultText: (state) => (state.result?.ok ? state.text || undefined : undefined),
  toolRan: geminiToolRan,
  usage: geminiUsage,
  redactArgs: (args) =>
    args.map((a) =>
      a.startsWith("--prompt=") && a.length > 9 ? `--prompt=(${a.length - 9} characters)` : a,
    ),
  // Node loads the CLI's ~70 MB bundle for about a second before its first request.
  bootsAfterBridge: true,
};

export type GeminiCliOptions = Partial<CliRunOptions>;

/** Gemini CLI as a CliAdapter. */
export function createGeminiCli(opts: GeminiCliOptions = {}): CliAdapter {
  const file =
    opts.path ?? resolveGeminiPath({ TETHER_GEMINI_PATH: process.env.TETHER_GEMINI_PATH });
  const baseEnv = opts.baseEnv ?? process.env;
  return createDialectCli("gemini", geminiDialect, { ...opts, path: file, baseEnv }, () =>
    probeGemini(file, baseEnv),
  );
}

/** `gemini --version` ("0.61.0") and whether `--help` offers `--resume`. */
export function probeGemini(
  file: string,
  baseEnv: Record<string, string | undefined>,
): Promise<CliProbe> {
  return probeCli(file, { env: baseEnv });
}
