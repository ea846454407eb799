/**
 * Gemini CLI's command line, environment and the two files it reads from the HOME Tether gives
 * it, for one turn (docs/gemini-cli-facts.md, "Invocation" and "What a repository can make the
 * CLI do"). No shell; the prompt on stdin.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { RunSettings } from "../agent-cli/runtime-adapter.js";
import { buildChildEnv } from "../process/child-env.js";

/**
 * The CLI sets git's `diff.external` to "" for every shell command (to neutralise a repository's
 * diff program), and git runs "" as that program: `git diff` of a change fails with "external diff
 * died". `--no-ext-diff` uses git's own diff (docs/gemini-cli-facts.md).
 */
export const GIT_DIFF_NOTE =
  'In this shell, pass --no-ext-diff to git diff, git show and git log -p (git diff --no-ext-diff): without it they fail with "external diff died".';

export function buildGeminiArgs(
  settings: RunSettings,
  resumeSessionId: string | undefined,
  images: readonly string[] = [],
): string[] {
  // `--prompt`: headless, the prompt read from stdin with the flag's text appended to it. The
  // CLI has no way to add to its system prompt (GEMINI_SYSTEM_MD replaces all of it), so
  // Tether's own instructions ride there, after the prompt, on every turn.
  const notes = [settings.appendSystemPrompt, GIT_DIFF_NOTE].filter(Boolean).join("\n\n");
  // Images: `@<path>` references, which the CLI reads and sends as inline data (the images'
  // directory, outside the workspace, added with --include-directories).
  const refs = images.length
    ? `\n\nImages from the thread: ${images.map((i) => `@${i}`).join(" ")}`
    : "";
  const extra = `${refs}\n\n${notes}`;
  const args = [`--prompt=${extra}`, "--output-format", "stream-json"];
  const dirs = [...new Set(images.map((i) => path.posix.dirname(i)))];
  if (dirs.length) args.push(`--include-directories=${dirs.join(",")}`);
  // The model is not remembered by a session: pass it every time (without it the CLI routes
  // each request through its "auto" model choice, an extra call per prompt).
  if (settings.model !== undefined) args.push("-m", settings.model);
  if (resumeSessionId !== undefined) args.push("--resume", resumeSessionId);
  return args;
}

/**
 * Fixed for every run: the workspace is never trusted (so its `.gemini/settings.json`, `.env`,
 * hooks, policies, commands, MCP servers, extensions and `GEMINI.md` do not apply), the CLI does
 * not relaunch itself in a second node process, and it has no colours to print.
 */
export const GEMINI_FIXED_ENV: Record<string, string> = {
  GEMINI_CLI_TRUST_WORKSPACE: "false",
  GEMINI_CLI_NO_RELAUNCH: "true",
  NO_COLOR: "1",
};

/** Other CLIs' settings have no business in Gemini's environment. */
const NOT_FOR_GEMINI = [/^ANTHROPIC_/, /^CLAUDE_CODE_/, /^IS_SANDBOX$/, /^DISABLE_/];

export function buildGeminiEnv(
  base: Record<string, string | undefined>,
  o: { home: string | undefined; extra: Record<string, string> | undefined },
): Record<string, string> {
  const env = buildChildEnv(base, { home: o.home, extra: o.extra });
  for (const name of Object.keys(env)) {
    if (NOT_FOR_GEMINI.some((re) => re.test(name)) && !(o.extra && name in o.extra))
      delete env[name];
  }
  return { ...env, ...GEMINI_FIXED_ENV };
}

/**
 * `~/.gemini/settings.json` for a run: API-key auth (the key the egress proxy swaps in),
 * folder trust off as a feature (so an untrusted workspace still runs headless; the
 * environment above says it is untrusted), no `.env` from the checkout, no usage statistics,
 * telemetry or update checks, and the tools the agent may not use left out.
 */
export function geminiSettings(settings: RunSettings): Record<string, unknown> {
  return {
    security: { auth: { selectedType: "gemini-api-key" }, folderTrust: { enabled: false } },
    advanced: { ignoreLocalEnv: true, autoConfigureMemory: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false, logPrompts: false },
    general: {
      enableAutoUpdate: false,
      enableAutoUpdateNotification: false,
      checkpointing: { enabled: false },
    },
    ui: { hideBanner: true, hideTips: true },
    ...(settings.disallowedTools?.length ? { tools: { exclude: settings.disallowedTools } } : {}),
  };
}

/** A TOML basic string. */
const toml = (s: string) => JSON.stringify(s);

/**
 * The user-tier policy (`~/.gemini/policies/tether.toml`): in an untrusted folder the CLI runs
 * in its default approval mode, where a headless run is refused every tool that would ask;
 * these rules allow the agent's tools without asking (all of them, or only `allowedTools`), and
 * deny `disallowedTools` above that. `allowRedirection`: without it the CLI turns an allowed shell
 * command with a redirection (`2>&1`, `< file`) into a question, refused headless; in the
 * sandbox a redirection reaches nothing the command itself could not.
 *
 * `SHELL_RULE`: the CLI runs heuristics on a shell command matched by a plain rule, and turns
 * into a question a command that runs `git` in an untrusted folder (`git status`), `rm -f`/`-rf`,
 * `find -exec`/`-delete`, `ln -s`, or a `dir_path` outside the workspace; a rule with a
 * `commandRegex` skips them, so this one allows every shell command wherever the shell tool is
 * allowed. They are no boundary (`bash -c '…'` is not checked) and the sandbox is: the checkout is
 * the agent's own work. Tether's trust setting is about the CLI's control files, which stay off.
 * No quantified group in the pattern: the CLI drops a rule its ReDoS check flags.
 */
const SHELL_RULE =
  `[[rule]]\ntoolName = "run_shell_command"\ncommandRegex = ${toml(String.raw`[^\x00]*`)}\n` +
  `decision = "allow"\npriority = 110\nallowRedirection = true\n`;
const SHELL_TOOLS = new Set(["*", "run_shell_command", "ShellTool"]);

export function geminiPolicy(settings: RunSettings): string {
  const rules: string[] = [];
  for (const tool of settings.disallowedTools ?? [])
    rules.push(`[[rule]]\ntoolName = ${toml(tool)}\ndecision = "deny"\npriority = 900\n`);
  if (settings.permissionMode === "plan") return rules.join("\n");
  const allowed = settings.allowedTools?.length ? settings.allowedTools : ["*"];
  if (allowed.some((t) => SHELL_TOOLS.has(t))) rules.push(SHELL_RULE);
  for (const tool of allowed)
    rules.push(
      `[[rule]]\ntoolName = ${toml(tool)}\ndecision = "allow"\npriority = 100\nallowRedirection = true\n`,
    );
  return rules.join("\n");
}

/**
 * Writes both files into the run's HOME (before each run: the agent may have changed them in
 * its own HOME during the last one, and a HOME is thrown away after each turn anyway).
 */
export async function writeGeminiHome(home: string, settings: RunSettings): Promise<void> {
  const dir = path.join(home, ".gemini");
  await fs.mkdir(path.join(dir, "policies"), { recursive: true });
  await fs.writeFile(
    path.join(dir, "settings.json"),
    JSON.stringify(geminiSettings(settings), null, 2),
  );
  await fs.writeFile(path.join(dir, "policies", "tether.toml"), geminiPolicy(settings));
}
