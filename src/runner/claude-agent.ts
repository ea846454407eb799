/** The runner's AgentPort over the Claude Code adapter. */
import type { Logger } from "../log.js";
import type { AgentCli, RunEvent } from "../claude/index.js";
import { killProcessesIn } from "../claude/process-tree.js";
import type { AgentPort, AgentRunRequest, AgentRunResult } from "./ports.js";

export function claudeAgent(cli: AgentCli, opts: { log: Logger; home?: string }): AgentPort {
  let capabilities: Promise<boolean> | undefined;
  return {
    canResume() {
      capabilities ??= cli.probe().then((c) => c.canResume);
      return capabilities;
    },
    async run(req: AgentRunRequest): Promise<AgentRunResult> {
      // A CLI left by a process that was killed (it is re-parented to init and keeps going)
      // must not write to the session alongside the new run.
      const strays = await killProcessesIn(req.cwd).catch(() => []);
      if (strays.length)
        opts.log.warn(
          { cwd: req.cwd, pids: strays },
          "stopped processes left in the workspace by an earlier run",
        );
      const s = req.settings;
      const run = cli.start({
        cwd: req.cwd,
        prompt: req.prompt,
        ...(req.resumeSessionId ? { resumeSessionId: req.resumeSessionId } : {}),
        settings: {
          ...(s.model ? { model: s.model } : {}),
          ...(s.maxTurns ? { maxTurns: s.maxTurns } : {}),
          ...(s.allowedTools?.length ? { allowedTools: s.allowedTools } : {}),
          ...(s.disallowedTools?.length ? { disallowedTools: s.disallowedTools } : {}),
          ...(s.permissionMode ? { permissionMode: s.permissionMode as never } : {}),
          appendSystemPrompt: req.systemPrompt,
          timeoutMs: s.timeoutMinutes * 60_000,
          stallMs: s.stallMinutes * 60_000,
        },
        signal: req.signal,
        ...(opts.home ? { home: opts.home } : {}),
        onEvent: async (e: RunEvent) => {
          if (e.type === "init") await req.onSession(e.sessionId, e.model);
          else if (e.type === "text" && e.parentToolUseId === null)
            req.onProgress({ kind: "text", text: e.text });
          else if (e.type === "tool_use") req.onProgress({ kind: "tool", name: e.name });
        },
      });
      const o = await run.outcome;
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
      };
    },
  };
}
