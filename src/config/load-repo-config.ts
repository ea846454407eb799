import type { ProbotOctokit } from "probot";
import type { ConfigClis } from "../core/cli-abilities.js";
import {
  CONFIG_FILE,
  mentionsOf,
  parseRepoConfig,
  type ConfigProblem,
  type RepoConfig,
} from "./repo-config.js";

/** Largest config file read. Real ones are a few hundred bytes; this keeps YAML parsing cheap. */
export const MAX_CONFIG_BYTES = 64 * 1024;
/** Deepest nesting accepted: the schema needs 4 levels; anything deeper is a mistake or an attack. */
export const MAX_CONFIG_DEPTH = 10;

export type LoadedConfig =
  | {
      ok: true;
      config: RepoConfig;
      files: string[];
      /** The repository has a file of its own (else the org's `.github` one, or none, applied). */
      repoFile: boolean;
    }
  | {
      ok: false;
      problems: ConfigProblem[];
      /** Mentions read leniently from the broken file, to tell whether a comment was meant for us. */
      agents: Array<{ agent: string; mention: string }>;
    };

/** The part of an installation Octokit config loading uses. */
export type ConfigOctokit = Pick<ProbotOctokit, "config" | "hook" | "request">;

const PLUGIN_PREFIX = "[@probot/octokit-plugin-config] ";
const CONTENTS_ROUTE = "/repos/{owner}/{repo}/contents/{path}";
const guarded = new WeakSet<object>();

/**
 * Read `.github/tether.yml` the way Probot's `context.config` does (`octokit.config.get`: the
 * repository's file, else the org's `.github` repository, following `_extends`), then validate it.
 *
 * A file that cannot be used (bad YAML, a YAML alias bomb, too big, too deep, `_extends`
 * pointing nowhere or in a circle, a schema violation) comes back as problems to show the user.
 * Only transport failures (GitHub down, rate limits, auth) throw, so the caller can retry them.
 */
export async function loadRepoConfig(
  octokit: ConfigOctokit,
  where: { owner: string; repo: string },
  opts: {
    /** The registered CLIs (src/cli-registry.ts's AGENT_CLIS): what `cli:` may name, and their rules. */
    clis: ConfigClis;
    /**
     * The repository had no file of its own last time: ask for the org's `.github` file at the
     * same time as the repository's (one round trip instead of two when it still has none; one
     * unused request when it has gained one).
     */
    orgFileLikely?: boolean;
  },
): Promise<LoadedConfig> {
  limitConfigSize(octokit);
  const forget =
    opts.orgFileLikely && where.repo.toLowerCase() !== ".github"
      ? prefetchOrgFile(octokit, where.owner)
      : undefined;
  let files: Array<{ owner: string; repo: string; path: string; config: unknown }>;
  try {
    ({ files } = await octokit.config.get({ ...where, path: CONFIG_FILE }));
  } catch (err) {
    const problem = configProblemOf(err);
    if (!problem) throw err;
    return { ok: false, problems: [problem], agents: mentionsOf(undefined) };
  } finally {
    forget?.();
  }
  // files: the repository's own file first, then the org default and `_extends` bases.
  const layers = files.map((f) => f.config).filter((c) => c !== null && c !== undefined);
  for (const [i, layer] of layers.entries()) {
    if (depthOf(layer, MAX_CONFIG_DEPTH + 1) > MAX_CONFIG_DEPTH) {
      const f = files[i]!;
      return {
        ok: false,
        problems: [
          {
            path: "(file)",
            message: `${f.owner}/${f.repo}:${f.path} nests deeper than ${MAX_CONFIG_DEPTH} levels`,
          },
        ],
        agents: mentionsOf(undefined),
      };
    }
  }
  // Schedules are the repository's own (each names one of its issues): an organisation's
  // default or an `_extends` base does not give every repository its schedules.
  const own = files[0]?.config !== null && files[0]?.config !== undefined;
  const merged = layers
    .map((layer, i) => (i === 0 && own ? layer : withoutSchedules(layer)))
    .reduceRight<unknown>((base, over) => mergeConfig(base, over), null);
  const parsed = parseRepoConfig(merged, opts.clis);
  if (parsed.ok)
    return {
      ok: true,
      config: parsed.config,
      files: files.map((f) => `${f.owner}/${f.repo}:${f.path}`),
      repoFile: files[0]?.config !== null && files[0]?.config !== undefined,
    };
  return { ok: false, problems: parsed.problems, agents: mentionsOf(merged) };
}

/**
 * Deep merge of a more specific file over its base: mappings merge key by key, anything else
 * (lists included) is replaced. Probot's default concatenates lists, which would make an org's
 * `disallowedTools` impossible to narrow in one repository.
 */
export function mergeConfig(base: unknown, over: unknown): unknown {
  if (!isRecord(base) || !isRecord(over)) return over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (k === "__proto__" || k === "constructor" || k === "prototype") continue;
    out[k] = k in base ? mergeConfig(base[k], v) : v;
  }
  return out;
}

function withoutSchedules(layer: unknown): unknown {
  if (!isRecord(layer) || !("schedules" in layer)) return layer;
  const { schedules: _dropped, ...rest } = layer;
  return rest;
}

/** Nesting depth of a parsed YAML value, counting no further than `cap`. */
export function depthOf(value: unknown, cap: number): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  let visited = 0;
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (d > max) max = d;
    if (max >= cap) return max;
    // YAML aliases can make a DAG much bigger than the file; the node budget stops that too.
    if (++visited > 50_000) return cap;
    if (typeof v === "object" && v !== null)
      for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

function configProblemOf(err: unknown): ConfigProblem | undefined {
  if (err instanceof ConfigTooLargeError) return { path: "(file)", message: err.message };
  if (!(err instanceof Error) || !err.message.startsWith(PLUGIN_PREFIX)) return undefined;
  let message = err.message.slice(PLUGIN_PREFIX.length).replace(/https?:\/\/\S+\/repos\//g, "");
  // The YAML parser's reason (a line and column, or "Excessive alias count …") says what to fix.
  const cause = (err as Error & { cause?: unknown }).cause;
  if (cause instanceof Error) message += `: ${cause.message.split("\n")[0]}`;
  return { path: "(file)", message };
}

export class ConfigTooLargeError extends Error {
  constructor(
    readonly file: string,
    readonly bytes: number,
  ) {
    super(`${file} is ${bytes} bytes; the limit is ${MAX_CONFIG_BYTES} bytes`);
    this.name = "ConfigTooLargeError";
  }
}

/**
 * The config plugin downloads and parses whatever the file holds. A hook on the contents route
 * refuses anything over MAX_CONFIG_BYTES before the YAML parser sees it.
 */
/** Contents requests started ahead of the config plugin asking, per Octokit. */
const prefetched = new WeakMap<object, Map<string, Promise<unknown>>>();
const PREFETCH = "tetherPrefetch";

function contentsKey(owner: unknown, repo: unknown, path: unknown, ref: unknown): string {
  return `${String(owner)}/${String(repo)}:${String(path)}@${String(ref ?? "")}`.toLowerCase();
}

/**
 * Start reading the org's `.github/tether.yml` now; the plugin's own request for it (made only
 * if the repository has none) gets this one's answer. Returns a function that drops it unused.
 */
function prefetchOrgFile(octokit: ConfigOctokit, owner: string): () => void {
  const pending: Promise<unknown> = octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
    owner,
    repo: ".github",
    path: CONFIG_FILE,
    mediaType: { format: "raw" },
    request: { [PREFETCH]: true },
  });
  pending.catch(() => {}); // the plugin's await reports it, if it asks at all
  const key = contentsKey(owner, ".github", CONFIG_FILE, undefined);
  let memo = prefetched.get(octokit);
  if (!memo) prefetched.set(octokit, (memo = new Map()));
  memo.set(key, pending);
  return () => {
    if (memo.get(key) === pending) memo.delete(key);
  };
}

function limitConfigSize(octokit: ConfigOctokit): void {
  if (guarded.has(octokit)) return;
  guarded.add(octokit);
  octokit.hook.wrap("request", async (request, options) => {
    if (options.method === "GET" && options.url === CONTENTS_ROUTE) {
      const isPrefetch = (options.request as Record<string, unknown> | undefined)?.[PREFETCH];
      const memo = prefetched.get(octokit);
      const key = contentsKey(options.owner, options.repo, options.path, options.ref);
      const early = isPrefetch ? undefined : memo?.get(key);
      if (early) {
        memo!.delete(key);
        return early as ReturnType<typeof request>;
      }
    }
    const response = await request(options);
    if (options.url === CONTENTS_ROUTE) {
      const data: unknown = response.data;
      const bytes =
        typeof data === "string"
          ? Buffer.byteLength(data)
          : data instanceof ArrayBuffer
            ? data.byteLength
            : 0;
      if (bytes > MAX_CONFIG_BYTES)
        throw new ConfigTooLargeError(
          `${String(options.owner)}/${String(options.repo)}:${String(options.path)}`,
          bytes,
        );
    }
    return response;
  });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
