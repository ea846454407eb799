/** Google's Gemini CLI in the registry of agent CLIs (src/cli-registry.ts): what differs from defineCli's defaults. */
import { defineCli } from "../agent-cli/agent-cli.js";
import { createGeminiCli, resolveGeminiPath } from "./gemini-cli.js";
import { GEMINI_SECRET_ENV } from "./model-endpoint.js";
import { geminiLayout } from "./session-layout.js";

export const geminiCli = defineCli({
  name: "gemini",
  label: "Gemini CLI",
  api: { name: "Gemini API", credentials: "`GEMINI_API_KEY`" },
  // A named model: no per-prompt routing call (docs/gemini-cli-facts.md).
  defaultModel: "gemini-2.5-pro",
  secretEnv: GEMINI_SECRET_ENV,
  // No operator settings pass: Tether writes the CLI's settings itself before each run
  // (gemini-args.ts).
  // An untrusted workspace ignores the first two (GEMINI_CLI_TRUST_WORKSPACE=false); masked
  // anyway. The CLI's file tools skip what `.geminiignore` lists, and its docs name Gemini Code
  // Assist's `.aiexclude` beside it: a pull request's could hide its own files from the agent
  // reviewing it (#38).
  controlFiles: [".gemini", "GEMINI.md", ".geminiignore", ".aiexclude"],
  layout: geminiLayout,
  // No compaction: `/compress` sent headless is only text to the model; the CLI compresses on
  // its own.
  // allowedTools / disallowedTools map to its policy file and tools.exclude (gemini-args.ts).
  toolRules: true,
  // Images: `@<path>` references in the prompt, sent as inline data (gemini-args.ts).
  // Gemini CLI 0.61 connects no MCP server in a workspace it does not trust, and Tether never
  // trusts a checkout (gemini-args.ts; test/integration/mcp-servers.test.ts pins it).
  mcpServers: {
    why: "Gemini CLI starts no MCP server in a workspace it does not trust, and Tether never trusts a checkout (its GEMINI.md files and hooks would apply)",
  },
  // Gemini CLI reports tokens only: its cost is Tether's estimate (pricing.ts).
  costEstimated: true,
  binary: resolveGeminiPath,
  adapter: createGeminiCli,
});
