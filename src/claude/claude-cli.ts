import os from "node:os";
import fs from "node:fs/promises";
import { buildChildEnv } from "../process/child-env.js";
import { buildClaudeArgs, SESSION_ID } from "./claude-args.js";
import { resolveClaudePath } from "./claude-path.js";
import { ANTHROPIC_MODEL_ENV, anthropicModelAccess } from "../providers/anthropic/endpoint.js";
import { classifyOutcome, earlyStop } from "./classify-outcome.js";
import { createDialectCli } from "../agent-cli/cli-adapter.js";
import type { CliDialect, CliRunOptions } from "../agent-cli/cli-dialect.js";
import { probeCli } from "../agent-cli/probe-cli.js";
import { newEvidence, observe, type RunEvidence } from "./run-evidence.js";
import type { CliAdapter, CliProbe, RunSettings } from "../agent-cli/runtime-adapter.js";
import { StreamParser, type StreamMessage } from "./stream-parser.js";
import { summarizeUsage } from "./usage.js";
import { readCostBefore } from "./session-cost.js";
import { findTranscript } from "./session-files.js";
import { readEntry } from "./session-entry.js";
import type { TurnImage } from "../core/images.js";

/** The run options (cli-dialect.ts), every one optional: the binary defaults to resolveClaudePath. */
export type ClaudeCliOptions = Partial<CliRunOptions>;

/** The operator's Anthropic and Claude Code settings, passed to the CLI (and only to it). */
export const CLAUDE_ENV_PREFIXES = ["ANTHROPIC_", "CLAUDE_CODE_"] as const;

/** What is Claude's own in a run: its arguments, environment, stream and verdicts. */
export const claudeDialect: CliDialect<StreamMessage, RunEvidence> = {
  label: "Claude CLI",
  short: "claude",
  installHint: "set TETHER_CLAUDE_PATH or install @anthropic-ai/claude-code",
  sessionId: SESSION_ID,
  args: (settings, resumeSessionId, where) => [
    ...buildClaudeArgs(settings, resumeSessionId, where.mcp, where.mcpServers),
    // Images go in on stdin as content blocks of one user message (claudeInput).
    ...(where.images?.length ? ["--input-format", "stream-json"] : []),
  ],
  input: claudeInput,
  // Every tool straight in the request, none deferred behind ToolSearch (its `false` is the
  // CLI's "standard" mode; docs/claude-cli-facts.md, "MCP tools").
  env: (base, o) => ({
    ENABLE_TOOL_SEARCH: "false",
    // No traffic beyond the API, unless the operator says otherwise.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    ...buildChildEnv(base, {
      home: o.home,
      prefixes: CLAUDE_ENV_PREFIXES,
      extra: { ...cacheTtlEnv(o.settings.cacheTtl), ...o.extra },
    }),
    // Seen with 2.1.197: without it the CLI silently asks the API for claude-opus-4-8 when told
    // `--model claude-opus-4-1` (or -4-0); 2.1.332 for claude-opus-5-5. The model a repository or
    // a comment names is the model asked for (test/e2e/session-controls.test.ts watches it).
    CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP: "1",
  }),
  modelAccess: (base) => ({ ...anthropicModelAccess(base), remove: ANTHROPIC_MODEL_ENV }),
  parser: (maxLineBytes) => new StreamParser(maxLineBytes),
  newState: newEvidence,
  // A resumed session's totals so far: 2.1.332 adds them to the run's in its result line.
  async beforeStart(state, spec, resumeSessionId) {
    if (resumeSessionId === undefined) return;
    const found = await findTranscript(spec.home ?? os.homedir(), resumeSessionId);
    if (!found) return;
    state.transcriptBefore = found;
    state.costBefore = await readCostBefore(found.file, resumeSessionId);
  },
  // Where the turn entered the session: what a later rewind to before it resumes at.
  async afterExit(state, spec) {
    const before = state.transcriptBefore;
    const sessionId = state.init?.sessionId;
    if (!before || !sessionId) return;
    // Looked up again: the sandbox could have swapped a path for a link during the run.
    const found = await findTranscript(spec.home ?? os.homedir(), sessionId);
    if (found?.file === before.file) state.entry = await readEntry(found.file, before.size);
  },
  entryOf: (evidence) => evidence.entry,
  observe,
  earlyStop,
  isFinal: (message) => message.kind === "result",
  classify: ({ resumeSessionId, state, exit }) =>
    classifyOutcome({
      ...(resumeSessionId === undefined ? {} : { resumeSessionId }),
      evidence: state,
      exit,
    }),
  sessionOf: (evidence) => evidence.init?.sessionId,
  resultText: (evidence) => evidence.result?.result ?? evidence.lastText ?? undefined,
  toolRan: (evidence) => evidence.toolUses > 0,
  usage: summarizeUsage,
  // The CLI (a 245 MB native binary) takes about 430 ms here to print its --version, let alone
  // send a request: socat listens long before that, so the run does not wait for it.
  bootsAfterBridge: true,
  /** The extra system prompt may be long and is the repo's text: log its size, not its words. */
  redactArgs: (args) =>
    args.map((a, i) => (args[i - 1] === "--append-system-prompt" ? `(${a.length} characters)` : a)),
};

/** The Claude Code CLI as a CliAdapter. */
export function createClaudeCli(opts: ClaudeCliOptions = {}): CliAdapter {
  const path =
    opts.path ?? resolveClaudePath({ TETHER_CLAUDE_PATH: process.env.TETHER_CLAUDE_PATH });
  const baseEnv = opts.baseEnv ?? process.env;
  return createDialectCli(
    "claude-code",
    claudeDialect,
    { ...opts, path, baseEnv },
    (): Promise<CliProbe> => probeCli(path, { env: baseEnv, prefixes: CLAUDE_ENV_PREFIXES }),
  );
}

/**
 * The prompt cache's lifetime, as the CLI takes it (docs/claude-cli-facts.md, "Prompt cache
 * lifetime"): `ENABLE_PROMPT_CACHING_1H=1` makes 2.1.197 mark its cache breakpoints
 * `{"type":"ephemeral","ttl":"1h"}` (with the `extended-cache-ttl-2025-04-11` beta); newer CLIs
 * also read `CLAUDE_CODE_PROMPT_CACHE_TTL`, which the operator's environment could otherwise set
 * (`CLAUDE_CODE_*` passes the allow-list), so both are said either way. Nothing said: the CLI's
 * own default (five minutes).
 */
export function cacheTtlEnv(ttl: RunSettings["cacheTtl"]): Record<string, string | undefined> {
  if (ttl === "1h") return { ENABLE_PROMPT_CACHING_1H: "1", CLAUDE_CODE_PROMPT_CACHE_TTL: "1h" };
  if (ttl === "5m") return { CLAUDE_CODE_PROMPT_CACHE_TTL: "5m" };
  return {};
}

/**
 * The prompt on stdin: as it is, or with images, one stream-json user message of a text block
 * and an image block per image (base64), the form the Messages API takes them in. Seen with
 * 2.1.332: `-p --input-format stream-json` reads the message, sends its blocks as they are, and
 * ends the run at the end of stdin (docs/claude-cli-facts.md, "Images").
 */
export async function claudeInput(prompt: string, images: readonly TurnImage[]): Promise<string> {
  if (images.length === 0) return prompt;
  const blocks: Array<Record<string, unknown>> = [{ type: "text", text: prompt }];
  for (const image of images) {
    const data = (await fs.readFile(image.path)).toString("base64");
    blocks.push({ type: "image", source: { type: "base64", media_type: image.mediaType, data } });
  }
  return `${JSON.stringify({ type: "user", message: { role: "user", content: blocks } })}\n`;
}
