/** How this process reaches GitHub as the app: key, API and web base URLs, Octokit class. */
import { readFile } from "node:fs/promises";
import { ProbotOctokit } from "probot";
import type { Env } from "../env.js";
import { conditionalRequests, type AnswerStore } from "./conditional-requests.js";
import { requestPolicy, type RequestPolicyOptions } from "./request-policy.js";

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

/**
 * Octokit for the app: ProbotOctokit with Tether's request policy (src/github/request-policy.ts)
 * in place of its throttling and retry plugins, which cost about 15 ms per request. Rate limits,
 * primary and secondary, are waited out; 5xx and network failures retried; writes spaced unless
 * TETHER_GITHUB_THROTTLE=false (which drops the spacing only, never the waiting). With `answers`,
 * the reads that rarely change are asked conditionally (src/github/conditional-requests.ts).
 *
 * The options are a function default because Probot builds them itself (an object default's
 * `throttle` would be replaced wholesale). One more fix over plain ProbotOctokit: Probot hands
 * the app-auth strategy a `request` without the baseUrl, so a direct
 * `octokit.auth({type: "installation"})` on GitHub Enterprise (or a local stand-in) would ask
 * api.github.com for the token; the strategy's request gets the Octokit's baseUrl here.
 */
export function appOctokit(
  env: Pick<Env, "TETHER_GITHUB_THROTTLE">,
  opts: { answers?: AnswerStore } = {},
): typeof ProbotOctokit {
  const policy: RequestPolicyOptions = { spacing: env.TETHER_GITHUB_THROTTLE };
  // The plugins are typed for what they touch (hook.wrap, log), not all of Octokit's core.
  type Plugin = Parameters<typeof ProbotOctokit.plugin>[0];
  // Order matters: a later plugin's hook wraps an earlier one's, so the conditional cache sees
  // the answer after the policy has counted it (a 304 as a 304).
  return ProbotOctokit.plugin(
    requestPolicy as unknown as Plugin,
    conditionalRequests as unknown as Plugin,
  ).defaults((options: Record<string, unknown>) => {
    const out: Record<string, unknown> = {
      ...options,
      // Probot's installation factory keeps `throttle` only while it is enabled.
      throttle: { ...(options.throttle as object | undefined), enabled: false },
      retry: { enabled: false },
      requestPolicy: policy,
      ...(opts.answers ? { conditionalRequests: opts.answers } : {}),
    };
    const auth = options.auth as { request?: RequestFn } | undefined;
    if (typeof options.baseUrl === "string" && auth?.request?.defaults) {
      out.auth = { ...auth, request: auth.request.defaults({ baseUrl: options.baseUrl }) };
    }
    return out;
  }) as typeof ProbotOctokit;
}
