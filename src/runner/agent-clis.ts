/**
 * The runner's one AgentPort over several CLIs: each request goes to the port of its agent's
 * `cli` (default claude). A CLI this runner does not have fails the turn with words saying so.
 */
import {
  failedRun,
  type AgentPort,
  type AgentRunRequest,
  type AgentRunResult,
  type CliKind,
} from "./ports.js";

export function agentForClis(ports: Partial<Record<CliKind, AgentPort>>): AgentPort {
  const portOf = (cli: CliKind | undefined) => ports[cli ?? "claude"];
  return {
    async canResume(cli) {
      return (await portOf(cli)?.canResume(cli)) ?? false;
    },
    async cliVersion(cli) {
      return (await portOf(cli)?.cliVersion?.(cli)) ?? null;
    },
    canCompact(cli) {
      return portOf(cli)?.canCompact?.(cli) ?? false;
    },
    async holdsSession(key, sessionId, cli) {
      const port = portOf(cli);
      if (!port) return false;
      return port.holdsSession ? port.holdsSession(key, sessionId, cli) : true;
    },
    async transcriptState(key, sessionId, cli) {
      const port = portOf(cli);
      return port?.transcriptState
        ? port.transcriptState(key, sessionId, cli)
        : { where: "local" as const };
    },
    async run(req: AgentRunRequest): Promise<AgentRunResult> {
      const cli = req.settings.cli ?? "claude";
      const port = portOf(cli);
      if (port) return port.run(req);
      return failedRun(
        `agent "${req.settings.name}" runs on the ${cli} CLI, which this runner does not have`,
      );
    },
  };
}
