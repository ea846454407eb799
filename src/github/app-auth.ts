/** How this process reaches GitHub as the app: key, API and web base URLs, Octokit class. */
import { readFile } from "node:fs/promises";
import { ProbotOctokit } from "probot";
import type { Env } from "../env.js";

export async function readPrivateKey(
  env: Pick<Env, "PRIVATE_KEY" | "PRIVATE_KEY_PATH">,
): Promise<string | undefined> {
  if (env.PRIVATE_KEY) return env.PRIVATE_KEY.replace(/\\n/g, "\n");
  if (env.PRIVATE_KEY_PATH) return readFile(env.PRIVATE_KEY_PATH, "utf8");
  return undefined;
}

/** The REST base: `GHE_PROTOCOL://GHE_HOST/api/v3` on GitHub Enterprise (or a local stand-in). */
export function githubApiUrl(env: Pick<Env, "GHE_HOST" | "GHE_PROTOCOL">): string {
  return env.GHE_HOST ? `${env.GHE_PROTOCOL}://${env.GHE_HOST}/api/v3` : "https://api.github.com";
}

type RequestFn = { defaults(options: { baseUrl: string }): RequestFn };

/** The throttling plugin's secondary-limit handler: true retries after `retryAfter` seconds. */
function waitOutSecondaryLimit(
  retryAfter: number,
  options: { method?: string; url?: string },
  octokit: { log: { warn(message: string): void } },
  retryCount: number,
): boolean {
  const retry = retryCount < 3;
  octokit.log.warn(
    `GitHub's secondary rate limit hit by ${options.method} ${options.url}; ${retry ? `retrying in ${retryAfter} s` : "giving up after three retries"}`,
  );
  return retry;
}

/**
 * Stands in for one of the throttling plugin's Bottleneck groups (`write`, `notifications`,
 * `search`) and runs each job at once: no spacing between requests.
 */
const UNSPACED = {
  key: () => ({
    schedule: <A extends unknown[], R>(_options: unknown, job: (...args: A) => R, ...args: A) =>
      Promise.resolve().then(() => job(...args)),
  }),
};

/**
 * Octokit for the app: retries on 5xx and rate limits (Probot's plugins); write spacing can be
 * turned off. Two fixes over plain ProbotOctokit, both as a function default because Probot
 * builds the options itself:
 * - Probot hands the app-auth strategy a `request` without the baseUrl, so a direct
 *   `octokit.auth({type: "installation"})` on GitHub Enterprise (or a local stand-in) asks
 *   api.github.com for the token; the strategy's request gets the Octokit's baseUrl here.
 * - Probot passes its own `throttle` options, which would replace an object default wholesale.
 *
 * - Probot's throttle options give up on the first secondary rate limit (they only log it);
 *   here it is waited out (`retry-after`, else the plugin's 60 s) up to three times, so an
 *   answer is not lost to a burst of writes.
 *
 * TETHER_GITHUB_THROTTLE=false removes the spacing only. It used to disable the throttling
 * plugin outright, and with it the waiting on primary and secondary rate limits (GitHub answers
 * those with 403, which the retry plugin never retries), so a rate-limited request failed.
 */
export function appOctokit(env: Pick<Env, "TETHER_GITHUB_THROTTLE">): typeof ProbotOctokit {
  return ProbotOctokit.defaults((options: Record<string, unknown>) => {
    const out: Record<string, unknown> = { ...options };
    out.throttle = {
      ...(options.throttle as object | undefined),
      onSecondaryRateLimit: waitOutSecondaryLimit,
      ...(env.TETHER_GITHUB_THROTTLE
        ? {}
        : { write: UNSPACED, notifications: UNSPACED, search: UNSPACED }),
    };
    const auth = options.auth as { request?: RequestFn } | undefined;
    if (typeof options.baseUrl === "string" && auth?.request?.defaults) {
      out.auth = { ...auth, request: auth.request.defaults({ baseUrl: options.baseUrl }) };
    }
    return out;
  });
}
