/** OpenAI's Codex CLI in the registry of agent CLIs (src/cli-registry.ts). */
import type { AgentCli } from "../agent-cli/agent-cli.js";
import { createCodexCli, resolveCodexPath } from "./codex-cli.js";
import { CODEX_SECRET_ENV } from "./model-endpoint.js";
import { codexLayout } from "./rollout-layout.js";

export const codexCli: AgentCli = {
  name: "codex",
  label: "Codex CLI",
  api: { name: "OpenAI API", credentials: "`OPENAI_API_KEY`" },
  // The model Codex 0.169.0 was recorded with.
  defaultModel: "gpt-5.5",
  pathEnv: "TETHER_CODEX_PATH",
  secretEnv: CODEX_SECRET_ENV,
  childEnvPrefixes: [],
  controlFiles: ["AGENTS.md", ".codex"],
  layout: codexLayout,
  homeStore: ".codex",
  // `codex exec` has no command that compacts without a terminal.
  compactPrompt: null,
  // `codex exec resume` cannot resume at a message (docs/codex-cli-facts.md).
  rewinds: false,
  forks: false,
  toolRules: false,
  turnLimit: false,
  cacheTtl: false,
  // Codex reports tokens only: its cost is Tether's estimate from a price table (pricing.ts).
  // `--image <file>` (codex-args.ts).
  images: true,
  mcpServers: true,
  costEstimated: true,
  // Probed on a runner's first Codex turn: a runner whose repositories use only another CLI
  // never runs it.
  probeAtStart: false,
  create: ({ env, log }) =>
    createCodexCli({
      path: resolveCodexPath({ TETHER_CODEX_PATH: env.TETHER_CODEX_PATH }),
      log: log.child({ component: "codex" }),
    }),
};
