import type { GitHub } from "./types.js";

/**
 * The app's bot login (`<slug>[bot]`), asked with the app's own (JWT) Octokit: what it posts with
 * an installation token is authored by that login.
 */
export async function appBotLogin(octokit: GitHub): Promise<string> {
  const { data } = await octokit.rest.apps.getAuthenticated();
  return `${data?.slug ?? "tether"}[bot]`;
}
