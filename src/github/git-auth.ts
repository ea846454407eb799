import { redactShapes } from "../core/redact.js";
import type { Env } from "../env.js";

/** GitHub's owner and repository name rules, loosely: what may appear in a clone URL path. */
const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const NAME = /^[A-Za-z0-9._-]{1,100}$/;

/** Splits "owner/name"; throws a plain-words error for anything else (including "..", "."). */
export function parseRepoName(repo: string): { owner: string; name: string } {
  const parts = repo.split("/");
  const [owner, name] = parts;
  if (
    parts.length !== 2 ||
    owner === undefined ||
    name === undefined ||
    !OWNER.test(owner) ||
    !NAME.test(name) ||
    name === "." ||
    name === ".."
  ) {
    throw new Error(
      `${JSON.stringify(repo)} is not a repository name: expected "owner/name" with GitHub's characters`,
    );
  }
  return { owner, name };
}

/**
 * The HTTPS clone URL on the API host's git endpoint: github.com, or GHE_PROTOCOL://GHE_HOST
 * for GitHub Enterprise (and for the local stand-in tests use). Carries no credentials: the
 * token travels in git's environment (see gitAuthEnv).
 */
export function cloneUrlFor(env: Pick<Env, "GHE_HOST" | "GHE_PROTOCOL">, repo: string): string {
  const { owner, name } = parseRepoName(repo);
  const origin = env.GHE_HOST ? `${env.GHE_PROTOCOL}://${env.GHE_HOST}` : "https://github.com";
  return `${origin}/${owner}/${name}.git`;
}

/**
 * Environment that makes git send the installation token to the clone URL's host, without it
 * ever being written to .git/config, argv (visible in `ps`) or a credential store.
 *
 * The header is scoped to the clone URL's origin (`http.<origin>/.extraHeader`) rather than
 * set for every URL, so a redirect or a submodule on another host never receives the token.
 * `credential.helper` is reset so a helper configured on the machine neither supplies other
 * credentials on a 401 nor stores ours.
 */
export function gitAuthEnv(cloneUrl: string, token: string): Record<string, string> {
  const origin = new URL(cloneUrl).origin;
  return {
    GIT_CONFIG_COUNT: "2",
    GIT_CONFIG_KEY_0: `http.${origin}/.extraHeader`,
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basicCredentials(token)}`,
    GIT_CONFIG_KEY_1: "credential.helper",
    GIT_CONFIG_VALUE_1: "",
    GIT_TERMINAL_PROMPT: "0",
  };
}

/** base64("x-access-token:TOKEN"): how GitHub takes an installation token over git's HTTP. */
export function basicCredentials(token: string): string {
  return Buffer.from(`x-access-token:${token}`).toString("base64");
}

/**
 * Blanks the token in text meant for people or logs: the token itself, its Basic-auth form,
 * and any Authorization header line git may echo when tracing.
 */
export function redactToken(text: string, token: string | undefined): string {
  let out = text.replace(/(authorization:\s*(?:basic|bearer|token)\s+)\S+/gi, "$1[redacted]");
  if (token) {
    out = out.split(token).join("[redacted]").split(basicCredentials(token)).join("[redacted]");
  }
  // Tokens have recognisable shapes (stateless ones included); blank any from elsewhere.
  return redactShapes(out);
}
