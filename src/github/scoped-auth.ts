/**
 * Installation tokens scoped to one repository and the permissions one step needs. An app's
 * installation token is otherwise valid for every repository the installation covers, with
 * every permission the app has; a turn works on one repository, and its steps need little:
 *
 * - the runner's REST calls on the thread: issues and pull requests (write), contents (read);
 * - the mirror's fetch: contents (read), and nothing else;
 * - publishing the agent's changes: contents (write) on that repository alone.
 *
 * Tokens come from the app's own client (`probot.auth()`, authenticated as the app): its
 * `auth({ type: "installation", installationId, repositoryNames, permissions })` asks GitHub
 * for such a token and caches it (per installation, repositories and permissions) until shortly
 * before it expires, so asking before every request costs nothing most of the time.
 */
import type { ProbotOctokit } from "probot";
import { parseRepoName } from "./git-auth.js";

type Octokit = InstanceType<typeof ProbotOctokit>;

export type Permissions = Record<string, "read" | "write">;

/** What the runner's REST calls on a thread need (see app.yml for why each). */
export const THREAD_PERMISSIONS: Permissions = {
  issues: "write",
  pull_requests: "write",
  contents: "read",
  metadata: "read",
};

/** What the mirror's fetch needs. */
export const FETCH_PERMISSIONS: Permissions = { contents: "read" };

export interface ScopedToken {
  installationId: number;
  repo: string;
  permissions: Permissions;
}

/** A token for one repository with these permissions (cached by the app's auth). */
export async function scopedToken(app: Octokit, s: ScopedToken): Promise<string> {
  const { name } = parseRepoName(s.repo);
  const auth = (await app.auth({
    type: "installation",
    installationId: s.installationId,
    repositoryNames: [name],
    permissions: s.permissions,
  })) as { token: string };
  return auth.token;
}

/**
 * A client whose every request carries a token scoped like `s`, fetched (from the cache,
 * mostly) per request, so a turn longer than a token's hour keeps working.
 */
export function scopedOctokit(
  app: Octokit,
  OctokitClass: typeof ProbotOctokit,
  s: ScopedToken,
  options: { baseUrl: string; log?: unknown },
): Octokit {
  const token = () => scopedToken(app, s);
  const authStrategy = () =>
    Object.assign(
      async () => ({ type: "token", tokenType: "installation", token: await token() }),
      {
        hook: async (
          request: { endpoint: { merge: (r: unknown, p: unknown) => Record<string, unknown> } } & ((
            o: unknown,
          ) => Promise<unknown>),
          route: unknown,
          parameters: unknown,
        ) => {
          const endpoint = request.endpoint.merge(route, parameters) as {
            headers: Record<string, string>;
          };
          endpoint.headers.authorization = `token ${await token()}`;
          return request(endpoint);
        },
      },
    );
  return new OctokitClass({ ...options, authStrategy } as ConstructorParameters<
    typeof ProbotOctokit
  >[0]);
}
