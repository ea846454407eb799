/** sst's opencode in the registry of agent CLIs (src/cli-registry.ts). */
import type { AgentCli } from "../agent-cli/agent-cli.js";
import { ANTHROPIC_SECRET_ENV } from "../providers/anthropic/endpoint.js";
import { createOpencodeCli, OPENCODE_HIDES, resolveOpencodePath } from "./opencode-cli.js";
import { opencodeLayout } from "./session-db.js";

export const opencodeCli: AgentCli = {
  name: "opencode",
  label: "opencode CLI",
  // Its Anthropic provider, through the egress proxy (model-endpoint.ts).
  api: { name: "Claude API", credentials: "`ANTHROPIC_API_KEY`" },
  defaultModel: "claude-sonnet-4-5",
  pathEnv: "TETHER_OPENCODE_PATH",
  secretEnv: ANTHROPIC_SECRET_ENV,
  // Its environment builder sets its own switches (opencode-args.ts).
  childEnvPrefixes: [],
  // Hidden on every opencode turn, not only a pull request's: a repository's plugin would run
  // even with the project's config switched off (docs/opencode-cli-facts.md).
  controlFiles: [...OPENCODE_HIDES],
  layout: opencodeLayout,
  homeStore: ".local/share/opencode",
  compactPrompt: null,
  rewinds: false,
  forks: false,
  toolRules: false,
  turnLimit: false,
  cacheTtl: false,
  // opencode reports its own cost (Tether's Claude prices when it says 0).
  // `run --file`, sent as image parts (opencode-args.ts).
  images: true,
  // The `mcp` of the config in OPENCODE_CONFIG_CONTENT (opencode-args.ts).
  mcpServers: true,
  costEstimated: false,
  probeAtStart: false,
  create: ({ env, log }) =>
    createOpencodeCli({
      path: resolveOpencodePath({ TETHER_OPENCODE_PATH: env.TETHER_OPENCODE_PATH }),
      log: log.child({ component: "opencode" }),
    }),
};
