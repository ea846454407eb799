/**
 * What Tether knows of one agent CLI, beyond its run (the CliDialect, cli-dialect.ts): one
 * object per CLI, in its own folder (`src/<cli>/entry.ts`), listed in src/cli-registry.ts. The
 * config's `cli:` values, the claim's version map, the stats and metrics labels, the runner's
 * wiring, the secret and environment lists and the pull request masks are all read from these
 * entries, so nothing outside a CLI's folder and the registry names a CLI.
 */
import type { Logger } from "../log.js";
import type { CliAdapter } from "./runtime-adapter.js";
import type { TranscriptLayout } from "./session-layout.js";

export interface AgentCli {
  /** The config's `cli:` value, the sessions table's `cli`, the label in stats and metrics. */
  readonly name: string;
  /** In sentences: "Claude CLI". */
  readonly label: string;
  /** The model API in sentences ("Claude API"), and the operator's credentials for it. */
  readonly api: { readonly name: string; readonly credentials: string };
  /** The model an agent that names none runs on. */
  readonly defaultModel: string;
  /** The environment variable naming the binary (else the one bundled with Tether). */
  readonly pathEnv: string;
  /**
   * The runner's environment variables that hold this CLI's model credentials: kept by the
   * egress proxy (the dialect's modelAccess), never in the sandbox, scrubbed from every log
   * line and comment by value.
   */
  readonly secretEnv: readonly string[];
  /** Secret values held some other way (e.g. inside a header list), scrubbed the same. */
  secretValues?(env: Readonly<Record<string, string | undefined>>): string[];
  /** Prefixes of the operator's settings for this CLI passed to its children (`LC_` is everyone's). */
  readonly childEnvPrefixes: readonly string[];
  /**
   * Paths at the top of a checkout this CLI would read as its own instructions or settings: on a
   * pull request turn each one the head changed is shown as the base has it (agent-control.ts).
   */
  readonly controlFiles: readonly string[];
  /** Where the CLI files a session in its HOME, for the session store. */
  readonly layout: TranscriptLayout;
  /** The directory in the runner's HOME where the CLI keeps its own state (the runtime id hashes it). */
  readonly homeStore: string;
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
  /** Probed when the runner starts (else on its first turn: a runner may never run it). */
  readonly probeAtStart: boolean;
  /** The CLI as a CliAdapter; the binary from `env[pathEnv]`, else the bundled one. */
  create(o: { env: Readonly<Record<string, string | undefined>>; log: Logger }): CliAdapter;
}
