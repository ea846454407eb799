import type { GitHub } from "./types.js";

/**
 * The app's bot login (`<slug>[bot]`), asked with the app's own (JWT) Octokit: what it posts with
 * an installation token is authored by that login.
 */
export async function appBotLogin(appOctokit: GitHub): Promise<string> {
  const { data } = await appOctokit.rest.apps.getAuthenticated();
  return `${data?.slug ?? "tether"}[bot]`;
}
