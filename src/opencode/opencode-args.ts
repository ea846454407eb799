/**
 * opencode's command line and environment for one turn (docs/opencode-cli-facts.md,
 * "Invocation" and "What a repository can make the CLI do"). No shell; the prompt on stdin.
 */
import { buildChildEnv } from "../process/child-env.js";
import type { RunSettings } from "../agent-cli/runtime-adapter.js";
import type { CliMcpServer } from "../agent-cli/cli-dialect.js";

/** The provider every Tether run uses: Anthropic's Messages API, through the egress proxy. */
export const PROVIDER = "anthropic";

/**
 * The configuration Tether passes in OPENCODE_CONFIG_CONTENT: no update check, no sharing, no
 * snapshots of the workspace (a second git store of it in HOME), no title model call, and no
 * web fetch or access outside the workspace without asking (and nothing asks: a run denies).
 */
export const OPENCODE_CONFIG = {
  $schema: "https://opencode.ai/config.json",
  autoupdate: false,
  share: "disabled",
  snapshot: false,
  permission: { webfetch: "deny", external_directory: "deny" },
  agent: { title: { disable: true } },
} as const;

/**
 * What the CLI's environment switches off: the project's opencode.json, `.opencode/` and
 * AGENTS.md (the first is not enough: see "hidden" in opencode-cli.ts), external plugins and the
 * built-in ones (which install packages from npm), Claude Code's files and skills, the model
 * list download, the update check, sharing, LSP downloads.
 */
export const OPENCODE_SWITCHES: Readonly<Record<string, string>> = {
  OPENCODE_DISABLE_PROJECT_CONFIG: "1",
  OPENCODE_PURE: "1",
  OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
  OPENCODE_DISABLE_CLAUDE_CODE: "1",
  OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  OPENCODE_DISABLE_SHARE: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
};

export function buildOpencodeArgs(
  settings: RunSettings,
  resumeSessionId: string | undefined,
  images: readonly string[] = [],
): string[] {
  const args = ["run", "--format", "json"];
  // Attached files (`--file`, an array: the `=` form keeps each flag to its one value).
  for (const image of images) args.push(`--file=${image}`);
  // The model is not remembered by the session the way a prompt cache needs: pass it every run.
  if (settings.model !== undefined) args.push("-m", `${PROVIDER}/${settings.model}`);
  if (resumeSessionId !== undefined) args.push("--session", resumeSessionId);
  // A plan turn (`/plan`): opencode's built-in read-only agent (no edits; a shell command asks,
  // and nothing answers a headless run's question, so it is refused).
  if (settings.permissionMode === "plan") args.push("--agent", "plan");
  return args;
}

/** Other CLIs' settings have no business in opencode's environment. */
const NOT_FOR_OPENCODE = [
  /^CLAUDE_CODE_/,
  /^IS_SANDBOX$/,
  /^DISABLE_/,
  /^OPENAI_/,
  /^CODEX_/,
  /^OPENCODE_/,
  /^XDG_/,
];

/**
 * The operator's MCP servers the agent was given (#39), as opencode's config `mcp` has them,
 * already as the CLI reaches them (cli-run.ts mcpPlan: in the sandbox a remote server is the
 * egress proxy's `/mcp/<name>` without headers, a stdio server holding secrets is `socat` to its
 * socket). OAuth detection off: a remote server's credentials are the proxy's to add.
 */
export function opencodeMcpConfig(
  servers: readonly CliMcpServer[],
): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    servers.map((s) => [
      s.name,
      s.type === "http"
        ? {
            type: "remote",
            url: s.url,
            ...(Object.keys(s.headers).length ? { headers: s.headers } : {}),
            oauth: false,
          }
        : {
            type: "local",
            command: [s.command, ...s.args],
            ...(Object.keys(s.env).length ? { environment: s.env } : {}),
          },
    ]),
  );
}

/** The child's environment: the shared allow-list and denylist, then opencode's switches. */
export function buildOpencodeEnv(
  base: Record<string, string | undefined>,
  o: {
    home: string | undefined;
    extra: Record<string, string> | undefined;
    mcpServers?: readonly CliMcpServer[] | undefined;
  },
): Record<string, string> {
  const env = buildChildEnv(base, { home: o.home, extra: o.extra });
  for (const name of Object.keys(env)) {
    if (NOT_FOR_OPENCODE.some((re) => re.test(name)) && !(o.extra && name in o.extra))
      delete env[name];
  }
  return {
    ...env,
    ...OPENCODE_SWITCHES,
    OPENCODE_CONFIG_CONTENT: JSON.stringify(
      o.mcpServers?.length
        ? { ...OPENCODE_CONFIG, mcp: opencodeMcpConfig(o.mcpServers) }
        : OPENCODE_CONFIG,
    ),
  };
}
