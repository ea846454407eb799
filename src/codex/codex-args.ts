/**
 * Codex's command line and environment for one turn (docs/codex-cli-facts.md, "Invocation" and
 * "What a repository can make the CLI do"). No shell, the prompt on stdin.
 */
import type { RunSettings } from "../agent-cli/runtime-adapter.js";
import type { McpServer } from "../review/line-comment-tool.js";
import type { CliMcpServer } from "../agent-cli/cli-dialect.js";
import { buildChildEnv } from "../process/child-env.js";

/** The model catalog without tool search, in a line-comment run's outbox (codex-cli.ts). */
export const CODEX_CATALOG = "codex-models.json";

/** The model provider Tether defines on every run (the built-in one ignores OPENAI_BASE_URL). */
export const PROVIDER_ID = "tether";

/** Codex's sandbox modes (`-s`, or `sandbox_mode` on a resume). */
export type CodexSandboxMode = "read-only" | "workspace-write" | "danger-full-access";

/** A TOML basic string (a JSON string is one, for the characters JSON escapes). */
function toml(s: string): string {
  return JSON.stringify(s);
}

/** A TOML inline table of strings. */
function tomlTable(t: Record<string, string>): string {
  return `{${Object.entries(t)
    .map(([k, v]) => `${toml(k)}=${toml(v)}`)
    .join(",")}}`;
}

export interface CodexArgsOptions {
  /** Where the provider sends requests: the sandbox's bridge, or the real API unsandboxed. */
  baseUrl: string;
  /**
   * Codex's own sandbox for the agent's commands. Inside Tether's sandbox it is
   * `danger-full-access`: Tether's bubblewrap is the boundary, and Codex's would cut the
   * commands off from the egress bridge (it refuses all network, 127.0.0.1 included).
   */
  sandboxMode: CodexSandboxMode;
  /** Tether's tool server (a pull request turn's line comments). */
  mcp?: McpServer | undefined;
  /** The operator's MCP servers the agent was given, as the CLI reaches them (#39). */
  servers?: readonly CliMcpServer[] | undefined;
  /** Where the run's model catalog is (`model_catalog_json`), when MCP servers are given. */
  catalog?: string | undefined;
  /** Image files attached to the prompt (`--image`), as the CLI sees their paths. */
  images?: readonly string[] | undefined;
}

export function buildCodexArgs(
  settings: RunSettings,
  resumeSessionId: string | undefined,
  o: CodexArgsOptions,
): string[] {
  const provider =
    `{name="Tether",base_url=${toml(o.baseUrl)},env_key="OPENAI_API_KEY",` +
    `wire_api="responses",supports_websockets=false}`;
  const args = ["exec"];
  if (resumeSessionId !== undefined) args.push("resume");
  args.push(
    "--json",
    "-c",
    `model_provider="${PROVIDER_ID}"`,
    "-c",
    `model_providers.${PROVIDER_ID}=${provider}`,
    // No traffic besides the API: no plugin marketplace sync, no analytics.
    "--disable",
    "plugins",
    "-c",
    "analytics.enabled=false",
    // No server-side web search: the proxy refuses a request that offers it (a search the
    // provider runs on the agent's words), unless the operator allows it (TETHER_PROXY_SERVER_TOOLS).
    "-c",
    'web_search="disabled"',
    // Nothing the checkout carries configures the agent: no AGENTS.md, no skills, no
    // execpolicy rules, no user config; never --trust (its .codex/config.toml then stays off).
    "-c",
    "project_doc_max_bytes=0",
    "-c",
    "skills.include_instructions=false",
    "-c",
    "skills.bundled.enabled=false",
    "--ignore-user-config",
    "--ignore-rules",
    // The agent's commands get no variable named like a key, secret or token.
    "-c",
    "shell_environment_policy.ignore_default_excludes=false",
    "--skip-git-repo-check",
  );
  // Neither the model nor the sandbox mode is remembered by a thread: pass both every time
  // (without -m a resume switches model and compacts, missing the whole prompt cache).
  if (settings.model !== undefined) args.push("-m", settings.model);
  if (resumeSessionId === undefined) args.push("-s", o.sandboxMode);
  else args.push("-c", `sandbox_mode="${o.sandboxMode}"`);
  if (o.mcp) {
    const at = `mcp_servers.${o.mcp.name}`;
    args.push(
      "-c",
      `${at}.command=${toml(o.mcp.command)}`,
      "-c",
      `${at}.args=[${o.mcp.args.map(toml).join(",")}]`,
    );
  }
  // The operator's servers the agent was given (#39): stdio ones (in a sandbox, `socat` to the
  // socket of one that holds secrets), remote ones (in a sandbox, the egress proxy's path).
  for (const s of o.servers ?? []) {
    const at = `mcp_servers.${s.name}`;
    if (s.type === "stdio") {
      args.push("-c", `${at}.command=${toml(s.command)}`);
      args.push("-c", `${at}.args=[${s.args.map(toml).join(",")}]`);
      if (Object.keys(s.env).length) args.push("-c", `${at}.env=${tomlTable(s.env)}`);
    } else {
      args.push("-c", `${at}.url=${toml(s.url)}`);
      if (Object.keys(s.headers).length)
        args.push("-c", `${at}.http_headers=${tomlTable(s.headers)}`);
    }
  }
  // Every catalog model defers MCP tools behind `tool_search`; this copy of the catalog says
  // none supports it, so the tools are in the request itself (docs/codex-cli-facts.md).
  const catalog = o.mcp
    ? `${o.mcp.outDir}/${CODEX_CATALOG}`
    : o.servers?.length
      ? o.catalog
      : undefined;
  if (catalog) args.push("-c", `model_catalog_json=${toml(catalog)}`);
  if (settings.appendSystemPrompt)
    args.push("-c", `developer_instructions=${toml(settings.appendSystemPrompt)}`);
  // `--image` takes several values: the `=` form keeps each to one, so the session id and the
  // `-` after them are never read as more images.
  for (const image of o.images ?? []) args.push(`--image=${image}`);
  if (resumeSessionId !== undefined) args.push(resumeSessionId);
  args.push("-");
  return args;
}

/** Claude's settings have no business in Codex's environment. */
const NOT_FOR_CODEX = [/^ANTHROPIC_/, /^CLAUDE_CODE_/, /^IS_SANDBOX$/, /^DISABLE_/];

/** The child's environment: the shared allow-list and denylist, minus Claude's settings. */
export function buildCodexEnv(
  base: Record<string, string | undefined>,
  o: { home: string | undefined; extra: Record<string, string> | undefined },
): Record<string, string> {
  const env = buildChildEnv(base, { home: o.home, extra: o.extra });
  for (const name of Object.keys(env)) {
    if (NOT_FOR_CODEX.some((re) => re.test(name)) && !(o.extra && name in o.extra))
      delete env[name];
  }
  return env;
}
