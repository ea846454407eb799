/** OpenAI's Codex CLI in the registry of agent CLIs (src/cli-registry.ts): what differs from defineCli's defaults. */
import { defineCli } from "../agent-cli/agent-cli.js";
import { createCodexCli, resolveCodexPath } from "./codex-cli.js";
import { CODEX_SECRET_ENV } from "./model-endpoint.js";
import { codexLayout } from "./rollout-layout.js";

export const codexCli = defineCli({
  name: "codex",
  label: "Codex CLI",
  api: { name: "OpenAI API", credentials: "`OPENAI_API_KEY`" },
  // The model Codex 0.169.0 was recorded with.
  defaultModel: "gpt-5.5",
  secretEnv: CODEX_SECRET_ENV,
  controlFiles: ["AGENTS.md", ".codex"],
  layout: codexLayout,
  // No compaction: `codex exec` has no command that compacts without a terminal. No rewinds:
  // `codex exec resume` cannot resume at a message (docs/codex-cli-facts.md). Images: `--image
  // <file>` (codex-args.ts).
  // Codex reports tokens only: its cost is Tether's estimate from a price table (pricing.ts).
  costEstimated: true,
  binary: resolveCodexPath,
  adapter: createCodexCli,
});
