import { forkingClis } from "../cli-registry.js";
import { CONFIG_FILE, type AgentConfig, type RepoConfig } from "../config/repo-config.js";
import { formatLimit } from "../spend/spend-limits.js";

/**
 * The /help reply: the commands, then the agents this repository has, with what addresses each
 * and what each may do. Every mention is inside code, so the reply neither pings a GitHub user
 * who happens to share an agent's name nor reads as a request to Tether itself.
 */
export function renderHelp(config: RepoConfig, mention = "@tether"): string {
  const m = `\`${mention}`;
  const agents = Object.entries(config.agents).map(([name, a]) =>
    row([code(a.mention), code(name), code(a.model), mayDo(a), limitsOf(a)]),
  );
  const spend = config.spend;
  const monthly = [
    spend.repositoryMonthlyUsd !== undefined
      ? `this repository ${formatLimit(spend.repositoryMonthlyUsd)}`
      : null,
    spend.installationMonthlyUsd !== undefined
      ? `the installation ${formatLimit(spend.installationMonthlyUsd)}`
      : null,
  ].filter((x): x is string => x !== null);
  return [
    "**Tether commands**",
    "",
    "Address an agent by its mention and write your request. Follow-up comments on this issue continue the same session.",
    "",
    "| comment | what happens |",
    "| --- | --- |",
    `| ${m} <request>\` | starts or continues this agent's session on this issue |`,
    `| ${m} /fresh <request>\` | starts a new session instead of resuming the last one |`,
    `| ${m} /cancel\` | cancels the queued turn and stops the running one |`,
    `| ${m} /status\` | shows what the agent is doing on this issue, what it has spent, and what resuming saved |`,
    `| ${m} /model <name> <request>\` | runs this turn on another model (the agent's \`models\` list what it may be); the next turn is back on the agent's own |`,
    `| ${m} /sessions\` | lists this agent's sessions on this issue: id, turns, last use, state, model, cost |`,
    `| ${m} /resume <session> [request]\` | makes that earlier session (the first characters of its id) the one the next turn resumes, e.g. to undo a \`/fresh\` |`,
    `| ${m} /from <agent> <request>\` | starts this agent's turn as a fork of that agent's session on this issue (agents on ${forkingClis()} only): it knows what the other read and did, and the other's session stays as it was |`,
    `| ${m} /plan <request>\` | asks for a plan first: the agent reads what it needs and answers with a plan, changing and publishing nothing; follow-ups keep planning |`,
    `| ${m} /go [more words]\` (or ${m} go\`) | carries out the plan in the same session, which remembers everything it read |`,
    `| ${m} /help\` | shows this help |`,
    "",
    "**Agents on this repository**",
    "",
    "| mention | agent | model | may | spend limits |",
    "| --- | --- | --- | --- | --- |",
    ...agents,
    "",
    `Changes an agent makes stay in its own checkout on the runner: Tether does not push them to the repository. ${
      monthly.length
        ? `Monthly spend limits (UTC): ${monthly.join("; ")}.`
        : "No monthly spend limit is set."
    } \`/fresh\` ${spend.freshResetsConversation ? "starts a conversation's spend count again" : "does not start a conversation's spend count again"}. Configure all of this in \`${CONFIG_FILE}\`.`,
  ].join("\n");
}

/** What the agent may do, in words: its permission mode, tools and network. */
function mayDo(a: AgentConfig): string {
  const parts: string[] = [];
  switch (a.permissionMode) {
    case "plan":
      parts.push("read and plan only (no edits)");
      break;
    case "acceptEdits":
      parts.push("edit files in its checkout");
      break;
    case "bypassPermissions":
      parts.push("use every tool without asking");
      break;
    case "default":
      parts.push("only what its tools allow (edits need `allowedTools`)");
      break;
  }
  parts.push(
    a.allowedTools.length
      ? `tools: ${a.allowedTools.map(code).join(", ")}`
      : "no tools beyond the CLI's defaults",
  );
  if (a.disallowedTools.length) parts.push(`never: ${a.disallowedTools.map(code).join(", ")}`);
  parts.push(
    a.network === "model-only"
      ? "network: the model API only"
      : a.network === "open"
        ? "network: any public host"
        : `network: ${a.network.map(code).join(", ")}`,
  );
  return parts.join("; ");
}

function limitsOf(a: AgentConfig): string {
  const parts: string[] = [];
  if (a.turnLimitUsd !== undefined) parts.push(`${formatLimit(a.turnLimitUsd)} a turn`);
  if (a.conversationLimitUsd !== undefined)
    parts.push(`${formatLimit(a.conversationLimitUsd)} a conversation`);
  return parts.length ? parts.join(", ") : "none";
}

/** A code span that holds any text (a tool rule may contain backticks). */
function code(text: string): string {
  const runs = text.match(/`+/g) ?? [];
  const fence = "`".repeat(Math.max(0, ...runs.map((r) => r.length)) + 1);
  const pad = runs.length ? " " : "";
  return `${fence}${pad}${text}${pad}${fence}`;
}

/** A table row; a `|` inside a cell (in a tool rule, say) must not end the cell. */
function row(cells: string[]): string {
  return `| ${cells.map((c) => c.replace(/\|/g, "\\|").replace(/\r?\n/g, " ")).join(" | ")} |`;
}
