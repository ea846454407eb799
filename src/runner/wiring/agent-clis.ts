/**
 * The runner's one Agent over several CLIs: each request goes to the Agent of its agent's
 * `cli` (default: the registry's first CLI). A CLI this runner does not have fails the turn with words saying so.
 */
import { DEFAULT_CLI } from "../../cli-registry.js";
import {
  failedRun,
  type Agent,
  type AgentRunRequest,
  type AgentRunResult,
  type CliKind,
} from "../ports.js";

export function agentForClis(agents: Partial<Record<CliKind, Agent>>): Agent {
  const agentOf = (cli: CliKind | undefined) => agents[cli ?? DEFAULT_CLI];
  return {
    async canResume(cli) {
      return (await agentOf(cli)?.canResume(cli)) ?? false;
    },
    async cliVersion(cli) {
      return (await agentOf(cli)?.cliVersion(cli)) ?? null;
    },
    canCompact(cli) {
      return agentOf(cli)?.canCompact(cli) ?? false;
    },
    canRewind(cli) {
      return agentOf(cli)?.canRewind(cli) ?? false;
    },
    async transcriptState(key, sessionId, cli) {
      return (await agentOf(cli)?.transcriptState(key, sessionId, cli)) ?? { where: "local" };
    },
    stage(req, cli) {
      return agentOf(cli)?.stage(req, cli) ?? null;
    },
    async run(req: AgentRunRequest): Promise<AgentRunResult> {
      const cli = req.settings.cli;
      const agent = agentOf(cli);
      if (agent) return agent.run(req);
      return failedRun(
        `agent "${req.settings.name}" runs on the ${cli} CLI, which this runner does not have`,
      );
    },
  };
}
