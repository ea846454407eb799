/**
 * /status with the runner's view: for each agent on the issue, what intake knows (running,
 * queued, last session) and what the next turn would do — resume or fresh, and why.
 */
import { DEFAULT_CLI, findCli } from "../../cli-registry.js";
import type { DescribeStatus, StatusRequest } from "../../intake/status.js";
import {
  issueKeyStates,
  readSpendFigures,
  renderSpend,
  renderStatus,
  turnModel,
} from "../../intake/status.js";
import { conversationBranch } from "../../publish/publisher.js";
import { decideResume, describeReason, type PriorSession } from "../../core/resume-decision.js";
import { gatherResumeInput, type ResumeSources } from "../../core/resume-inputs.js";
import type { TurnHistory } from "../../core/turn-history.js";
import { shortSessionId } from "../../core/redact.js";

/**
 * The resume decision's sources as `/status` knows them. The web process may sit on another
 * machine than the runner that takes the task, so the runtime and CLI checks assume a runner that
 * can resume it takes it (the claim query prefers one, and runtime affinity keeps an unstored
 * session with its runtime while alive); what the CLI can do is its registry entry's word.
 */
function statusSources(
  prior: PriorSession | null,
  head: Awaited<ReturnType<TurnHistory["transcriptHead"]>>,
): ResumeSources {
  return {
    runtimeId: prior?.runtimeId ?? "",
    cliCanResume: async () => true,
    cliVersion: async () => head?.cliVersion ?? null,
    // Runners compact the sessions of a CLI that compacts on request, drop the others.
    canCompact: (cli) => (findCli(cli)?.compactPrompt ?? null) !== null,
    // Runners rewind a session whose read comment changed, on a CLI that can.
    canRewind: (cli) => findCli(cli)?.rewinds ?? false,
    transcript: async () =>
      head
        ? head.overBound
          ? { where: "over_bound" }
          : { where: "store", cliVersion: head.cliVersion }
        : undefined,
  };
}

/** /status as the runner's view gives it, the key's history read from `history`. */
export const describeNextTurn =
  (history: TurnHistory): DescribeStatus =>
  (req) =>
    describe(history, req);

async function describe(history: TurnHistory, req: StatusRequest): Promise<string> {
  const blocks: string[] = [];
  for (const state of await issueKeyStates(req)) {
    const key = {
      repoId: req.repoId,
      repo: req.repo,
      issueNumber: req.issueNumber,
      agent: state.agent,
    };
    const prior = await history.priorSession(key);
    const head = prior ? await history.transcriptHead(key, prior.sessionId) : null;
    const cli = req.config.agents[state.agent]?.cli ?? DEFAULT_CLI;
    const epoch = await history.epoch(key);
    const input = await gatherResumeInput(history, statusSources(prior, head), {
      key,
      prior,
      epoch,
      cli,
      policy: req.config.resume,
      forceFresh: state.queued?.forceFresh ?? false,
      requestedModel: state.queued?.requestedModel ?? null,
      workDir: prior?.workDir ?? "",
      workDirExists: prior?.workDir != null,
      now: () => req.now,
    });
    const decision = decideResume(input);
    const model = turnModel(state.queued, req.config.agents[state.agent]?.model);
    const onModel = model ? ` on \`${model}\`` : "";
    const next =
      decision.kind === "resume"
        ? `- Next turn: **${decision.reason === "compacted" ? "compacts, then resumes" : decision.reason === "rewound" ? "rewinds, then resumes" : "resumes"}** session \`${shortSessionId(decision.sessionId)}\`${prior?.runtimeId ? ` on runtime \`${prior.runtimeId}\`` : ""} (\`${decision.reason}\`)${onModel}.`
        : `- Next turn: **fresh session** (\`${decision.reason}\`: ${describeReason(decision.reason)})${onModel}.`;
    const spend = renderSpend(
      await readSpendFigures(req, state.agent),
      req.config.agents[state.agent],
      req.config,
      req.now,
    );
    const conv = await history.conversation(key);
    const mode = req.config.agents[state.agent]?.changes ?? "pull_request";
    const plan = req.config.agents[state.agent]?.permissionMode === "plan";
    const branch = conv
      ? `- Changes: branch \`${conv.branch}\` (${conv.commits} commit${conv.commits === 1 ? "" : "s"} pushed${conv.headSha ? `, last \`${conv.headSha.slice(0, 7)}\`` : ""})${conv.pullNumber ? `, pull request #${conv.pullNumber}` : ""}.`
      : mode === "off" || plan
        ? `- Changes: not published (${plan ? "the agent plans only" : "`changes: off`"}).`
        : `- Changes: none published yet; they will go to branch \`${conversationBranch(key.issueNumber, key.agent)}\`${mode === "pull_request" ? " with a pull request" : ""}.`;
    const last = await history.lastTurn(key);
    const mention = req.config.agents[state.agent]?.mention ?? `@${state.agent}`;
    const planLine =
      last?.planTurn && last.status === "succeeded"
        ? [
            `- Plan: **a plan is waiting for \`/go\`**: \`${mention} /go\` carries it out in this session; any other request keeps planning.`,
          ]
        : [];
    blocks.push(
      [renderStatus([state], req.config, req.now), ...spend, next, ...planLine, branch].join("\n"),
    );
  }
  return blocks.join("\n\n");
}
