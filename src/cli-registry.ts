/**
 * The registry of agent CLIs: every CLI Tether runs, one entry each (an AgentCli,
 * src/agent-cli/agent-cli.ts, in the CLI's own folder). Everything else that depends on which
 * CLIs exist is derived from this list: the config's `cli:` values, the claim's version map,
 * the stats and metrics labels, the runner's wiring, the secret and environment lists and the
 * pull request masks. Adding a CLI is its folder and one line here. The database keeps a
 * session's `cli` as text and checks nothing: a CHECK cannot read this list, so the code
 * validates it (the config schema on the way in).
 */
import type { AgentCli } from "./agent-cli/agent-cli.js";
import type { CliSecrets } from "./core/secret-env.js";
import type { StatsClis } from "./sql/stats/assemble.js";
import { claudeCli } from "./claude/entry.js";
import { codexCli } from "./codex/entry.js";
import { geminiCli } from "./gemini/entry.js";
import { opencodeCli } from "./opencode/entry.js";

/** Every registered CLI; the first is the default (an agent that names none runs on it). */
export const AGENT_CLIS: readonly [AgentCli, ...AgentCli[]] = [
  claudeCli,
  codexCli,
  geminiCli,
  opencodeCli,
];

/** The registered CLIs' names, in the registry's order. */
export const CLI_NAMES = AGENT_CLIS.map((c) => c.name) as [string, ...string[]];

/** The CLI an agent that names none runs on. */
export const DEFAULT_CLI: string = AGENT_CLIS[0].name;

/** What the stats read needs to know of the CLIs, handed to it as data (src/sql/stats/read.ts). */
export const STATS_CLIS: StatsClis = {
  names: CLI_NAMES,
  defaultCli: DEFAULT_CLI,
  costEstimated: (name) => findCli(name)?.costEstimated ?? true,
};

/** The registered CLI of that name (the default for none); undefined when none is registered. */
export function findCli(name: string | null | undefined): AgentCli | undefined {
  const wanted = name ?? DEFAULT_CLI;
  return AGENT_CLIS.find((c) => c.name === wanted);
}

/** The registered CLI of that name (the default for none); throws for a name not registered. */
export function cliOf(name: string | null | undefined): AgentCli {
  const cli = findCli(name);
  if (!cli) throw new Error(`no agent CLI "${name}" is registered (${CLI_NAMES.join(", ")})`);
  return cli;
}

/** Every CLI's credentials: never in a sandbox, scrubbed everywhere by value (core/secret-env.ts). */
export const CLI_SECRETS: CliSecrets = {
  names: AGENT_CLIS.flatMap((c) => c.secretEnv),
  values: (env) => AGENT_CLIS.flatMap((c) => c.secretValues?.(env) ?? []),
};

/** Every CLI's settings prefixes (for the docs' list of what reaches a CLI). */
export const CLI_ENV_PREFIXES: readonly string[] = AGENT_CLIS.flatMap((c) => c.childEnvPrefixes);

/** Every CLI's control files: masked on a pull request turn whichever CLI runs. */
export const CLI_CONTROL_FILES: readonly string[] = AGENT_CLIS.flatMap((c) => c.controlFiles);

/** The CLIs whose sessions fork (`/from`), in words: "claude", "a or b". */
export function forkingClis(): string {
  return AGENT_CLIS.filter((c) => c.forks)
    .map((c) => c.name)
    .join(" or ");
}
