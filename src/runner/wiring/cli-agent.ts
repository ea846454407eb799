/**
 * The runner's Agent over one CliAdapter (Claude Code's or Codex's): a fresh HOME per
 * turn holding only the session it resumes (a Claude transcript, or a Codex rollout, from the
 * store given), the sandbox, and the session saved back after the run.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Logger } from "../../log.js";
import type { CliAdapter, RunEvent } from "../../agent-cli/runtime-adapter.js";
import type { CliAbilities } from "../../core/cli-abilities.js";
import { killProcessesIn } from "../../process/process-tree.js";
import { COMMENTS_FILE } from "../../review/line-comment-tool.js";
import { readToolOutput, type ReviewRequest } from "../../review/review-plan.js";
import { IN_SANDBOX } from "../../sandbox/bwrap-args.js";
import type { NetworkPolicy } from "../../sandbox/egress.js";
import type { Sandbox } from "../../sandbox/sandbox.js";
import { turnHome, type TranscriptStore } from "../../sessions/transcripts.js";
import type { McpServers, NamedMcpServer } from "../../config/mcp-servers.js";
import type {
  Agent,
  AgentRunRequest,
  AgentRunResult,
  AgentSettings,
  McpTurnFacts,
  StagedRun,
} from "../ports.js";

/** A run's HOME, and how the resumed session's transcript was put in it. */
interface TurnHome {
  home: string;
  restored: AgentRunResult["restored"];
}
type HomeRequest = Pick<AgentRunRequest, "key" | "cwd" | "resumeSessionId" | "transcriptKey">;

export interface CliAgentOptions {
  log: Logger;
  /**
   * Where runs happen. With it, every run gets a fresh HOME (under `homes`) holding only the
   * transcript of the session it resumes, from `transcripts`, and saved back there after.
   */
  contain?: { sandbox: Sandbox; transcripts: TranscriptStore; homes: string };
  /** Without `contain`: the HOME the CLI keeps its sessions in (default: this process's). */
  home?: string;
  /**
   * What the CLI can do that the Agent answers for (its registry entry's, core/cli-abilities.ts):
   * compact a session on request, resume one at an earlier message. Default: neither.
   */
  abilities?: Pick<CliAbilities, "compactPrompt" | "rewinds">;
  /** The operator's MCP servers (TETHER_MCP_SERVERS), which agents pick from by name. */
  mcpServers?: McpServers;
}

export function cliAgent(cli: CliAdapter, opts: CliAgentOptions): Agent {
  let capabilities: Promise<{ canResume: boolean; version: string | null }> | undefined;
  const probe = () => (capabilities ??= cli.probe());
  const contain = opts.contain;
  /** A fresh HOME holding only the transcript of the session the run resumes. */
  const makeHome = async (
    c: NonNullable<CliAgentOptions["contain"]>,
    req: HomeRequest,
  ): Promise<TurnHome> => {
    const home = await turnHome(c.homes);
    if (!req.resumeSessionId) return { home, restored: undefined };
    // The CLI files a session under its working directory; in the sandbox that is
    // /workspace on every runner, so a transcript saved on one runner resumes on another.
    const cwd = c.sandbox.sandboxed ? IN_SANDBOX.workspace : req.cwd;
    // A transcript that cannot be restored leaves the CLI nothing to resume: it says so,
    // and the turn retries fresh (resume_rejected).
    const r = await c.transcripts
      .restore(req.transcriptKey ?? req.key, req.resumeSessionId, home, cwd)
      .catch((err: Error) => {
        opts.log.warn({ err: err.message }, "could not restore the session's transcript");
        return null;
      });
    return { home, restored: r?.from ? { from: r.from, ms: Math.round(r.ms) } : undefined };
  };
  /** The HOMEs staged by this agent, each taken by at most one run. */
  const staged = new WeakMap<StagedRun, () => Promise<TurnHome> | null>();
  return {
    async canResume() {
      return (await probe()).canResume;
    },
    async cliVersion() {
      return (await probe()).version;
    },
    canCompact: () => (opts.abilities?.compactPrompt ?? null) !== null,
    canRewind: () => opts.abilities?.rewinds === true,
    // Without a store, the CLI's own on this runtime.
    transcriptState: async (key, sessionId) =>
      contain ? contain.transcripts.state(key, sessionId) : { where: "local" },
    stage(req) {
      if (!contain) return null;
      const made = makeHome(contain, req);
      made.catch(() => {}); // the run that takes it sees the failure
      let state: "staged" | "taken" | "released" = "staged";
      const run: StagedRun = {
        key: req.key,
        cwd: req.cwd,
        resumeSessionId: req.resumeSessionId,
        async release() {
          if (state !== "staged") return;
          state = "released";
          const h = await made.catch(() => null);
          if (h) await fs.rm(h.home, { recursive: true, force: true }).catch(() => {});
        },
      };
      staged.set(run, () => {
        if (state !== "staged") return null;
        state = "taken";
        return made;
      });
      return run;
    },
    async run(req: AgentRunRequest): Promise<AgentRunResult> {
      if (!contain?.sandbox.sandboxed) {
        // A CLI left by a process that was killed (it is re-parented to init and keeps going)
        // must not write to the session alongside the new run. A sandbox dies with its parent.
        const strays = await killProcessesIn(req.cwd).catch(() => []);
        if (strays.length)
          opts.log.warn(
            { cwd: req.cwd, pids: strays },
            "stopped processes left in the workspace by an earlier run",
          );
      }
      let home = opts.home;
      let restored: AgentRunResult["restored"];
      if (contain) {
        const s = req.staged;
        const fits =
          s &&
          s.cwd === req.cwd &&
          s.resumeSessionId === req.resumeSessionId &&
          s.key.repo === req.key.repo &&
          s.key.issueNumber === req.key.issueNumber &&
          s.key.agent === req.key.agent;
        const made = (fits && staged.get(s)?.()) || makeHome(contain, req);
        ({ home, restored } = await made);
      }
      const s = req.settings;
      let compacted: AgentRunResult["compacted"];
      const mcp = pickMcpServers(s.mcpServers ?? [], opts.mcpServers ?? {});
      // The line-comment tool's directory: the sandbox's outbox, outside the checkout (never
      // committed) and removed after the run.
      const outbox = req.lineComments ? await outboxDir(contain?.homes ?? os.tmpdir()) : undefined;
      try {
        const run = cli.start({
          cwd: req.cwd,
          prompt: req.prompt,
          ...(req.images?.length ? { images: req.images } : {}),
          ...(req.resumeSessionId ? { resumeSessionId: req.resumeSessionId } : {}),
          settings: {
            ...(s.model ? { model: s.model } : {}),
            ...(s.cacheTtl && s.cacheTtl !== "auto" ? { cacheTtl: s.cacheTtl } : {}),
            ...(s.maxTurns ? { maxTurns: s.maxTurns } : {}),
            ...(s.turnLimitUsd ? { maxBudgetUsd: s.turnLimitUsd } : {}),
            ...(req.forkSession && req.resumeSessionId ? { forkSession: true } : {}),
            ...(req.resumeAt && req.resumeSessionId ? { resumeAt: req.resumeAt } : {}),
            ...(s.allowedTools?.length ? { allowedTools: s.allowedTools } : {}),
            ...(s.disallowedTools?.length ? { disallowedTools: s.disallowedTools } : {}),
            ...(s.permissionMode ? { permissionMode: s.permissionMode as never } : {}),
            appendSystemPrompt: req.systemPrompt,
            timeoutMs: s.timeoutMinutes * 60_000,
            stallMs: s.stallMinutes * 60_000,
          },
          signal: req.signal,
          ...(outbox
            ? {
                lineComments: {
                  dir: outbox,
                  requestChanges: req.lineComments?.requestChanges === true,
                },
              }
            : {}),
          ...(home ? { home } : {}),
          ...(mcp.servers.length ? { mcpServers: mcp.servers } : {}),
          ...(contain
            ? {
                sandbox: {
                  sandbox: contain.sandbox,
                  network: networkPolicy(s),
                  ...(req.origin ? { origin: req.origin } : {}),
                  ...(req.masks?.length ? { masks: req.masks } : {}),
                },
              }
            : {}),
          onEvent: async (e: RunEvent) => {
            req.onRunEvent?.(e);
            if (e.type === "init") {
              noteMcpStarts(mcp.facts, mcp.servers, e.mcpServers);
              await req.onSession(e.sessionId, e.model);
            } else if (e.type === "text" && e.parentToolUseId === null)
              req.onProgress({ kind: "text", text: e.text });
            else if (e.type === "tool_use") {
              countMcpCall(mcp.facts, e.name);
              req.onProgress({ kind: "tool", name: e.name });
            } else if (e.type === "compacted")
              compacted = { trigger: e.trigger, preTokens: e.preTokens, postTokens: e.postTokens };
          },
        });
        const o = await run.outcome;
        const review = outbox ? await readReview(outbox, opts.log) : undefined;
        if (contain && home && o.sessionId) {
          await contain.transcripts
            .save(req.key, o.sessionId, home)
            .catch((err: Error) =>
              opts.log.error(
                { err: err.message, sessionId: o.sessionId },
                "could not keep the session's transcript",
              ),
            );
        }
        return {
          outcome: o.kind,
          sessionId: o.sessionId ?? null,
          text: o.resultText ?? null,
          usage: {
            model: o.usage.model,
            inputTokens: o.usage.inputTokens,
            outputTokens: o.usage.outputTokens,
            cacheReadTokens: o.usage.cacheReadTokens,
            cacheCreationTokens: o.usage.cacheCreationTokens,
            contextTokens: o.usage.contextTokens,
            costUsd: o.usage.costUsd,
            numTurns: o.usage.numTurns,
            durationMs: o.usage.durationMs,
          },
          contextWindow: o.usage.contextWindow,
          toolRan: o.toolRan,
          detail: o.kind === "success" ? null : o.detail,
          ...(o.contextOverflow ? { contextOverflow: true } : {}),
          ...(restored ? { restored } : {}),
          ...(compacted ? { compacted } : {}),
          ...(review ? { review } : {}),
          ...(o.entry ? { entry: o.entry } : {}),
          ...(mcp.given ? { mcp: mcp.facts } : {}),
        };
      } finally {
        if (outbox) await fs.rm(outbox, { recursive: true, force: true }).catch(() => {});
        if (contain && home) await fs.rm(home, { recursive: true, force: true }).catch(() => {});
      }
    },
  };
}

/** A run's outbox beside its HOME (Tether's own directory, never the checkout). */
async function outboxDir(root: string): Promise<string> {
  await fs.mkdir(root, { recursive: true, mode: 0o700 });
  return fs.mkdtemp(path.join(root, "review-"));
}

/** What the agent left in the line-comment tool's file; bad lines are skipped and logged. */
async function readReview(dir: string, log: Logger): Promise<ReviewRequest> {
  const file = path.join(dir, COMMENTS_FILE);
  // The agent could have put anything there (a link, a huge file): read a bounded regular file.
  const st = await fs.lstat(file).catch(() => null);
  if (!st) return { comments: [], requestChanges: null };
  if (!st.isFile() || st.size > 1_000_000) {
    log.warn({ size: st.size }, "the line-comment file is not a file of at most 1 MB; ignored");
    return { comments: [], requestChanges: null };
  }
  const read = readToolOutput(await fs.readFile(file, "utf8"));
  if (read.skipped)
    log.warn({ skipped: read.skipped }, "line-comment file: lines that are not comments skipped");
  return { comments: read.comments, requestChanges: read.requestChanges };
}

/**
 * The servers an agent's settings name, from the operator's list. A name the list no longer has
 * (the operator removed it after intake accepted the comment) fails like a server that did not
 * start: the turn goes on without it, and the footer says so.
 */
export function pickMcpServers(
  names: readonly string[],
  offered: McpServers,
): { servers: NamedMcpServer[]; facts: McpTurnFacts; given: boolean } {
  const facts: McpTurnFacts = { failed: [], toolCalls: {} };
  const servers: NamedMcpServer[] = [];
  for (const name of names) {
    facts.toolCalls[name] = 0;
    const entry = Object.hasOwn(offered, name) ? offered[name] : undefined;
    if (entry) servers.push({ ...entry, name });
    else facts.failed.push({ name, why: "not configured on this runner" });
  }
  return { servers, facts, given: names.length > 0 };
}

/** A server the CLI's init line says did not connect is named as failed (once). */
function noteMcpStarts(
  facts: McpTurnFacts,
  servers: readonly NamedMcpServer[],
  started: Array<{ name: string; status: string }> | undefined,
): void {
  if (!started) return;
  for (const s of servers) {
    const seen = started.find((m) => m.name === s.name);
    const status = seen?.status ?? "not started";
    if (status === "connected") continue;
    if (facts.failed.some((f) => f.name === s.name)) continue;
    facts.failed.push({ name: s.name, why: status });
  }
}

/** A tool call `mcp__<server>__<tool>` of a given server counts for it. */
function countMcpCall(facts: McpTurnFacts, tool: string): void {
  const m = /^mcp__(.+?)__/.exec(tool);
  if (m && Object.hasOwn(facts.toolCalls, m[1]!)) facts.toolCalls[m[1]!]! += 1;
}

/** The agent's `network` setting as the egress proxy's policy. */
export function networkPolicy(s: Pick<AgentSettings, "network">): NetworkPolicy {
  const n = s.network ?? "model-only";
  if (n === "model-only") return { kind: "model-only" };
  if (n === "open") return { kind: "open" };
  return { kind: "hosts", hosts: n };
}
