/**
 * What Tether knows of one agent CLI, beyond its run (the CliDialect, cli-dialect.ts): one
 * object per CLI, in its own folder (`src/<cli>/entry.ts`, made with defineCli below, which fills
 * in what the entry leaves out), listed in src/cli-registry.ts. The config's `cli:` values, the claim's version map, the stats and metrics labels, the runner's
 * wiring, the secret and environment lists and the pull request masks are all read from these
 * entries, so nothing outside a CLI's folder and the registry names a CLI.
 */
import type { CliAbilities } from "../core/cli-abilities.js";
import type { Logger } from "../log.js";
import type { CliRunOptions } from "./cli-dialect.js";
import type { CliAdapter } from "./runtime-adapter.js";
import type { TranscriptLayout } from "./session-layout.js";

/** A CLI's entry: what it can do (CliAbilities, the one statement of it), and what it is. */
export interface AgentCli extends CliAbilities {
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
  /** Probed when the runner starts (else on its first turn: a runner may never run it). */
  readonly probeAtStart: boolean;
  /** The CLI as a CliAdapter; the binary from `env[pathEnv]`, else the bundled one. */
  create(o: { env: Readonly<Record<string, string | undefined>>; log: Logger }): CliAdapter;
}

/**
 * What a CLI is unless its entry says otherwise: a CLI Tether is being taught starts with none of
 * the abilities it has to be shown to have (compaction, rewinds, forks, tool rules, a turn limit,
 * a cache lifetime), takes images and MCP servers, reports its own cost, passes none of the
 * operator's settings, and is probed on its first turn.
 */
const DEFAULTS = {
  childEnvPrefixes: [],
  compactPrompt: null,
  rewinds: false,
  forks: false,
  toolRules: false,
  turnLimit: false,
  cacheTtl: false,
  images: true,
  mcpServers: true,
  costEstimated: false,
  probeAtStart: false,
} as const satisfies Partial<AgentCli>;

/** An entry as a CLI's folder writes it: what differs from DEFAULTS, and how to make its adapter. */
export type CliEntry = Omit<AgentCli, keyof typeof DEFAULTS | "pathEnv" | "homeStore" | "create"> &
  Partial<Pick<AgentCli, keyof typeof DEFAULTS | "homeStore">> & {
    /** The binary: the path `env[pathEnv]` names, else the one bundled with Tether. */
    binary(env: Readonly<Record<string, string | undefined>>): string;
    /** The CLI as a CliAdapter over that binary. */
    adapter(o: Pick<CliRunOptions, "path" | "log">): CliAdapter;
  };

/**
 * A CLI's entry with the defaults filled in: `pathEnv` is `TETHER_<NAME>_PATH`, `homeStore` is
 * `.<name>`, and the adapter logs as the CLI's name.
 */
export function defineCli(entry: CliEntry): AgentCli {
  const { binary, adapter, ...own } = entry;
  return {
    ...DEFAULTS,
    pathEnv: `TETHER_${entry.name.toUpperCase()}_PATH`,
    homeStore: `.${entry.name}`,
    ...own,
    create: ({ env, log }) =>
      adapter({ path: binary(env), log: log.child({ component: entry.name }) }),
  };
}
