/**
 * What an agent CLI can do: the one statement of it. Each CLI's entry (src/<cli>/entry.ts, made by
 * src/agent-cli/define-cli.ts, which fills in what an entry leaves out) says it; the registry
 * (src/cli-registry.ts) hands it to whoever asks: the config check (config/agent-config.ts reads
 * `toolRules` and `mcpServers`), the runner's Agent (runner/wiring/cli-agent.ts reads
 * `compactPrompt` and `rewinds`), the turn. Types only: the folders below the CLIs take the facts
 * as data and never import the registry.
 *
 * One thing is learned by running the binary instead: whether it resumes a session (its probe,
 * `CliProbe.canResume` in src/agent-cli/runtime-adapter.ts).
 */
export interface CliAbilities {
  /** A resumed run's prompt that compacts the session; null: the CLI cannot compact on request. */
  readonly compactPrompt: string | null;
  /** Whether a session can be resumed at an earlier message (a rewind past an edited comment). */
  readonly rewinds: boolean;
  /** Whether a session can be forked into a new one (`/from <agent>`). */
  readonly forks: boolean;
  /** Whether the config's tool rules (`allowedTools`, `disallowedTools`, `permissionMode`) apply. */
  readonly toolRules: boolean;
  /** Whether its `maxTurns` applies. */
  readonly turnLimit: boolean;
  /** Whether a turn can choose its prompt cache's lifetime (`cacheTtl`). */
  readonly cacheTtl: boolean;
  /**
   * Whether the run can show the model images from the thread (issue #39); when not, why (the
   * footer says it, and no image is fetched for it).
   */
  readonly images: true | { readonly why: string };
  /**
   * Whether the run can be given the operator's MCP servers (`agents.<name>.mcpServers`); when
   * not, why (the config check refuses the setting for it).
   */
  readonly mcpServers: true | { readonly why: string };
  /** Whether a turn's cost is Tether's estimate from the tokens (the CLI reports none). */
  readonly costEstimated: boolean;
}

/** A CLI as the repo config knows it: its name, its default model and what the config checks. */
export interface ConfigCli extends Pick<CliAbilities, "toolRules" | "mcpServers"> {
  /** The config's `cli:` value. */
  readonly name: string;
  /** The model an agent that names none runs on. */
  readonly defaultModel: string;
}

/** The registered CLIs, handed to the config by the registry; the first is the default. */
export type ConfigClis = readonly [ConfigCli, ...ConfigCli[]];
