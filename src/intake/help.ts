import { CONFIG_FILE, type RepoConfig } from "../config/repo-config.js";

/**
 * The /help reply. Every mention is inside code, so the reply neither pings a GitHub user who
 * happens to share an agent's name nor reads as a request to Tether itself.
 */
export function renderHelp(config: RepoConfig, mention = "@tether"): string {
  const m = `\`${mention}`;
  const agents = Object.entries(config.agents)
    .map(([name, a]) => `\`${a.mention}\` (${name}, ${a.model})`)
    .join(", ");
  return [
    "**Tether commands**",
    "",
    "Address an agent by its mention and write your request. Follow-up comments on this issue continue the same Claude session.",
    "",
    "| comment | what happens |",
    "| --- | --- |",
    `| ${m} <request>\` | starts or continues this agent's session on this issue |`,
    `| ${m} /fresh <request>\` | starts a new session instead of resuming the last one |`,
    `| ${m} /cancel\` | cancels the queued turn and stops the running one |`,
    `| ${m} /status\` | shows what the agent is doing on this issue |`,
    `| ${m} /help\` | shows this help |`,
    "",
    `Agents here: ${agents}. Configure them in \`${CONFIG_FILE}\`.`,
  ].join("\n");
}
