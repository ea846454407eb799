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

/** REST base (`…/api/v3` on GitHub Enterprise or a local stand-in) and the web/git base. */
export function githubBaseUrls(env: Pick<Env, "GHE_HOST" | "GHE_PROTOCOL">): {
  api: string;
  web: string;
} {
  if (!env.GHE_HOST) return { api: "https://api.github.com", web: "https://github.com" };
  const web = `${env.GHE_PROTOCOL}://${env.GHE_HOST}`;
  return { api: `${web}/api/v3`, web };
}

type RequestFn = { defaults(options: { baseUrl: string }): RequestFn };

/**
 * Octokit for the app: retries on 5xx and rate limits (Probot's plugins); write spacing can be
 * turned off. Two fixes over plain ProbotOctokit, both as a function default because Probot
 * builds the options itself:
 * - Probot hands the app-auth strategy a `request` without the baseUrl, so a direct
 *   `octokit.auth({type: "installation"})` on GitHub Enterprise (or a local stand-in) asks
 *   api.github.com for the token; the strategy's request gets the Octokit's baseUrl here.
 * - Probot passes its own `throttle` options, which would replace an object default wholesale.
 */
export function appOctokit(env: Pick<Env, "TETHER_GITHUB_THROTTLE">): typeof ProbotOctokit {
  return ProbotOctokit.defaults((options: Record<string, unknown>) => {
    const out: Record<string, unknown> = { ...options };
    if (!env.TETHER_GITHUB_THROTTLE) {
      out.throttle = { ...(options.throttle as object | undefined), enabled: false };
    }
    const auth = options.auth as { request?: RequestFn } | undefined;
    if (typeof options.baseUrl === "string" && auth?.request?.defaults) {
      out.auth = { ...auth, request: auth.request.defaults({ baseUrl: options.baseUrl }) };
    }
    return out;
  });
}
