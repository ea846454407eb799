import { AGENT_CLIS } from "../../src/cli-registry.js";
import { describe, expect, it } from "vitest";
import { parseRepoConfig, type RepoConfig } from "../../src/config/repo-config.js";
import { renderHelp } from "../../src/intake/help.js";
import { ARG_COMMANDS, COMMANDS } from "../../src/intake/parse-comment.js";

function config(raw: unknown): RepoConfig {
  const parsed = parseRepoConfig(raw, AGENT_CLIS);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.config;
}

/** The rows of the agents table: cells by column. */
function agentRows(help: string): string[][] {
  const lines = help.split("\n");
  const start = lines.indexOf("| mention | agent | model | may | spend limits |");
  expect(start).toBeGreaterThan(0);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(
      line
        .slice(2, -2)
        .split(/(?<!\\) \| /)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

describe("/help", () => {
  it("lists every command", () => {
    const help = renderHelp(config(undefined));
    const withRequest = ["fresh", "plan", "go", ...ARG_COMMANDS];
    for (const c of COMMANDS.filter((c) => !withRequest.includes(c)))
      expect(help).toContain(`/${c}\``);
    for (const c of withRequest.filter((c) => c !== "go")) expect(help).toContain(`/${c} <`);
    expect(help).toContain("/go [more words]`");
  });

  it("lists the built-in agent when nothing is configured", () => {
    expect(agentRows(renderHelp(config(undefined)))).toEqual([
      [
        "`@tether`",
        "`tether`",
        "`claude-sonnet-4-5`",
        "edit files in its checkout; no tools beyond the CLI's defaults; network: the model API only",
        "none",
      ],
    ]);
  });

  it("lists the repository's own agents, with mention, model, what each may do and its limits; no built-in agent beside an own one on @tether", () => {
    const help = renderHelp(
      config({
        agents: {
          claude: {
            mention: "@tether",
            allowedTools: ["Read", "Bash(npm test:*)"],
            disallowedTools: ["WebFetch"],
            turnLimitUsd: 0.5,
            conversationLimitUsd: 5,
          },
          review: {
            mention: "@tether-review",
            model: "claude-opus-4-1",
            permissionMode: "plan",
            network: ["registry.npmjs.org", "*.pypi.org"],
          },
        },
        spend: { repositoryMonthlyUsd: 300, freshResetsConversation: true },
      }),
    );
    expect(agentRows(help)).toEqual([
      [
        "`@tether`",
        "`claude`",
        "`claude-sonnet-4-5`",
        "edit files in its checkout; tools: `Read`, `Bash(npm test:*)`; never: `WebFetch`; network: the model API only",
        "$0.50 a turn, $5.00 a conversation",
      ],
      [
        "`@tether-review`",
        "`review`",
        "`claude-opus-4-1`",
        "read and plan only (no edits); no tools beyond the CLI's defaults; network: `registry.npmjs.org`, `*.pypi.org`",
        "none",
      ],
    ]);
    expect(help).toContain("Tether does not push them");
    expect(help).toContain("Monthly spend limits (UTC): this repository $300.00.");
    expect(help).toContain("`/fresh` starts a conversation's spend count again");
  });

  it.each([
    ["bypassPermissions", "use every tool without asking"],
    ["default", "only what its tools allow"],
  ])("says what permission mode %s allows", (permissionMode, words) => {
    const [row] = agentRows(renderHelp(config({ agents: { tether: { permissionMode } } })));
    expect(row?.[3]).toContain(words);
  });

  it("keeps a tool rule with | or ` inside its cell and code span", () => {
    const help = renderHelp(
      config({ agents: { tether: { allowedTools: ["Bash(a|b)", "Bash(echo `x`)"] } } }),
    );
    const [row] = agentRows(help);
    expect(row).toHaveLength(5);
    expect(row?.[3]).toContain("`Bash(a\\|b)`");
    expect(row?.[3]).toContain("`` Bash(echo `x`) ``");
  });

  it("never mentions anyone outside code", () => {
    const help = renderHelp(
      config({ agents: { claude: { mention: "@tether" }, review: { mention: "@tether-review" } } }),
    );
    const prose = help.replace(/(`+)[\s\S]*?\1/g, "");
    expect(prose).not.toMatch(/@\w/);
  });
});
