/** sst's opencode in the registry of agent CLIs (src/cli-registry.ts): what differs from defineCli's defaults. */
import { defineCli } from "../agent-cli/agent-cli.js";
import { ANTHROPIC_SECRET_ENV } from "../providers/anthropic/endpoint.js";
import { createOpencodeCli, OPENCODE_HIDES, resolveOpencodePath } from "./opencode-cli.js";
import { opencodeLayout } from "./session-db.js";

export const opencodeCli = defineCli({
  name: "opencode",
  label: "opencode CLI",
  // Its Anthropic provider, through the egress proxy (model-endpoint.ts).
  api: { name: "Claude API", credentials: "`ANTHROPIC_API_KEY`" },
  defaultModel: "claude-sonnet-4-5",
  secretEnv: ANTHROPIC_SECRET_ENV,
  // No operator settings pass: its environment builder sets its own switches (opencode-args.ts).
  // Hidden on every opencode turn, not only a pull request's: a repository's plugin would run
  // even with the project's config switched off (docs/opencode-cli-facts.md).
  controlFiles: [...OPENCODE_HIDES],
  layout: opencodeLayout,
  homeStore: ".local/share/opencode",
  // Images: `run --file`, sent as image parts (opencode-args.ts). MCP servers: the `mcp` of the
  // config in OPENCODE_CONFIG_CONTENT (opencode-args.ts). Its cost: its own report (Tether's
  // Claude prices when it says 0).
  binary: resolveOpencodePath,
  adapter: createOpencodeCli,
});
