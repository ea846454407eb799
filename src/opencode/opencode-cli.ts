/**
 * sst's opencode (its linux-x64 binary package `opencode-linux-x64`, pinned) as a CliAdapter: the same run engine as Claude's
 * (src/claude/cli-run.ts) with opencode's dialect (a CliDialect, src/claude/cli-dialect.ts).
 * Facts it rests on: docs/opencode-cli-facts.md.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { createDialectCli } from "../agent-cli/cli-adapter.js";
import type { CliDialect, CliRunOptions } from "../agent-cli/cli-dialect.js";
import { probeOnce, probeVersionAndHelp, runProbe } from "../agent-cli/probe-cli.js";
import type { CliAdapter, CliProbe } from "../agent-cli/runtime-adapter.js";
import { buildOpencodeArgs, buildOpencodeEnv } from "./opencode-args.js";
import {
  classifyOpencode,
  newOpencodeEvidence,
  observeOpencode,
  opencodeEarlyStop,
  opencodeToolRan,
  opencodeUsage,
  type OpencodeEvidence,
} from "./opencode-outcome.js";
import { OpencodeStreamParser, type OpencodeMessage } from "./opencode-stream.js";
import { opencodeModelAccess } from "./model-endpoint.js";
import { SESSION_ID } from "./session-db.js";

/** The platform package that carries the binary (`bin/opencode`), as the launcher picks it. */
const PACKAGES: Record<string, string> = {
  "linux-x64": "opencode-linux-x64",
  "linux-arm64": "opencode-linux-arm64",
  "darwin-x64": "opencode-darwin-x64",
  "darwin-arm64": "opencode-darwin-arm64",
};

/**
 * Paths of a checkout opencode 1.18.33 reads with every "ignore the project" switch on: its
 * newer config loader finds them from the working directory up and imports
 * `{plugin,plugins}/*.{js,ts}` and the plugins they name, running their code (facts, "What a
 * repository can make the CLI do"). Hidden by the sandbox on every run.
 */
export const OPENCODE_HIDES = ["opencode.json", "opencode.jsonc", ".opencode"] as const;

/**
 * The opencode binary: TETHER_OPENCODE_PATH; else the native binary in the pinned package's
 * platform dependency (called directly: the package's own `bin` is a copy its install script
 * makes); else plain `opencode` (a run then says it could not be found).
 */
export function resolveOpencodePath(env: { TETHER_OPENCODE_PATH?: string | undefined }): string {
  if (env.TETHER_OPENCODE_PATH) return env.TETHER_OPENCODE_PATH;
  const pkg = PACKAGES[`${process.platform}-${process.arch}`];
  if (pkg) {
    try {
      const require = createRequire(import.meta.url);
      const bin = path.join(
        path.dirname(require.resolve(`${pkg}/package.json`)),
        "bin",
        "opencode",
      );
      fs.accessSync(bin, fs.constants.X_OK);
      return bin;
    } catch {
      /* not installed */
    }
  }
  return "opencode";
}

export const opencodeDialect: CliDialect<OpencodeMessage, OpencodeEvidence> = {
  label: "opencode CLI",
  short: "opencode",
  installHint: "set TETHER_OPENCODE_PATH or install opencode-linux-x64",
  sessionId: SESSION_ID,
  args: (settings, resumeSessionId, where) =>
    buildOpencodeArgs(
      settings,
      resumeSessionId,
      where.images?.map((i) => i.path),
    ),
  env: buildOpencodeEnv,
  modelAccess: opencodeModelAccess,
  parser: (maxLineBytes) => new OpencodeStreamParser(maxLineBytes),
  newState: newOpencodeEvidence,
  async beforeStart(state, spec) {
    state.model = spec.settings.model ?? null;
    state.mcpServers = (spec.mcpServers ?? []).map((s) => s.name);
    // Tether's instructions: the global AGENTS.md of the run's own HOME, the one instruction
    // file the CLI reads with the project's switched off (nothing else gets into its prompt).
    const extra = spec.settings.appendSystemPrompt;
    if (extra && spec.home) {
      const dir = path.join(spec.home, ".config", "opencode");
      await fs.promises.mkdir(dir, { recursive: true });
      await fs.promises.writeFile(path.join(dir, "AGENTS.md"), extra);
    }
  },
  observe: observeOpencode,
  earlyStop: opencodeEarlyStop,
  // No line ends a turn for sure: after an overflow the CLI compacts and goes on.
  isFinal: () => false,
  classify: classifyOpencode,
  sessionOf: (state) => state.sessionId,
  resultText: (state) => state.lastText,
  toolRan: opencodeToolRan,
  usage: opencodeUsage,
  hides: OPENCODE_HIDES,
  // It boots in a second or more: its first request never comes before the bridge listens.
  bootsAfterBridge: true,
};

export type OpencodeCliOptions = Partial<CliRunOptions>;

/** The opencode CLI as a CliAdapter. */
export function createOpencodeCli(opts: OpencodeCliOptions = {}): CliAdapter {
  const file =
    opts.path ?? resolveOpencodePath({ TETHER_OPENCODE_PATH: process.env.TETHER_OPENCODE_PATH });
  const baseEnv = opts.baseEnv ?? process.env;
  // The CLI's first line comes only once the model's first answer streams (facts, "The
  // stream"): the start-up limit has to cover a boot on a busy machine and a model call.
  const startTimeoutMs = opts.startTimeoutMs ?? 180_000;
  const o = { ...opts, path: file, baseEnv, startTimeoutMs };
  return createDialectCli(
    "opencode",
    opencodeDialect,
    o,
    probeOnce(() => probeOpencode(file, baseEnv)),
  );
}

/** `opencode --version` ("1.18.33") and whether `opencode run --help` offers `--session`. */
export async function probeOpencode(
  file: string,
  baseEnv: Record<string, string | undefined>,
): Promise<CliProbe> {
  // A HOME of its own: the CLI makes its directories there on any command.
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "tether-opencode-probe-"));
  try {
    const env = {
      PATH: baseEnv.PATH,
      HOME: home,
      ...buildOpencodeEnv({}, { home, extra: undefined }),
    };
    return await probeVersionAndHelp(file, (args) => runProbe(file, args, env), {
      args: ["run", "--help"],
      resumes: (help) => /(^|\s)--session\b/m.test(help.stdout + help.stderr),
    });
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}
