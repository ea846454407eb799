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
 * `auth({ type: "installation", installationId, repositoryIds, permissions })` asks GitHub
 * for such a token and caches it (per installation, repositories and permissions) until shortly
 * before it expires, so asking before every request costs nothing most of the time.
 *
 * The repository is named by its id (`repository_ids`), which every webhook carries and the
 * task keeps: GitHub's `repositories` field takes bare names, and how it matches their case is
 * not documented (owner/name are kept lower case here). A name is sent only for a task without
 * an id (one queued by hand).
 */
import type { ProbotOctokit } from "probot";
import { parseRepoName } from "./git-auth.js";
import type { RequestCounter } from "./request-count.js";

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

/** The one repository a token is for. */
export interface TokenRepo {
  installationId: number;
  /** `owner/name`. */
  repo: string;
  /** GitHub's id of the repository (the webhook's `repository.id`); null when unknown. */
  repoId: number | null;
}

export interface ScopedToken extends TokenRepo {
  permissions: Permissions;
}

/**
 * An installation token as the app's auth gives it: the token, and what GitHub granted it (its
 * answer to POST /app/installations/{id}/access_tokens), which the conditional cache pins its
 * answers under (src/github/conditional-requests.ts).
 */
interface TokenAuth {
  type: "token";
  tokenType: "installation";
  token: string;
  permissions?: Record<string, string>;
  repositorySelection?: string;
  repositoryIds?: number[];
  repositoryNames?: string[];
}

/** A token for one repository with these permissions, and its grant (cached by the app's auth). */
async function scopedAuth(app: Octokit, s: ScopedToken): Promise<TokenAuth> {
  return (await app.auth({
    type: "installation",
    installationId: s.installationId,
    ...(s.repoId !== null
      ? { repositoryIds: [s.repoId] }
      : { repositoryNames: [parseRepoName(s.repo).name] }),
    permissions: s.permissions,
  })) as TokenAuth;
}

/** A token for one repository with these permissions (cached by the app's auth). */
export async function scopedToken(app: Octokit, s: ScopedToken): Promise<string> {
  return (await scopedAuth(app, s)).token;
}

/**
 * A client whose every request carries a token scoped like `s`, fetched (from the cache,
 * mostly) per request, so a turn longer than a token's hour keeps working.
 */
export function scopedOctokit(
  app: Octokit,
  OctokitClass: typeof ProbotOctokit,
  s: ScopedToken,
  options: { baseUrl: string; log?: unknown; githubRequests?: RequestCounter },
): Octokit {
  const token = () => scopedToken(app, s);
  const authStrategy = () =>
    Object.assign(
      // The grant with the token: the conditional cache serves a pinned answer only to a token
      // of the same repositories and permissions.
      async () => scopedAuth(app, s),
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

/**
 * What a push of the agent's changes needs: contents (write) on that repository alone, plus
 * workflows (write) only when the change touches .github/workflows/ and the repository allows
 * it. Nothing else: no issues, no pull requests, no other repository.
 */
export function pushPermissions(workflows: boolean): Permissions {
  return workflows
    ? { contents: "write", workflows: "write", metadata: "read" }
    : { contents: "write", metadata: "read" };
}

/** Why a push token could not be had, in words for the thread. */
export class PushTokenError extends Error {
  override name = "PushTokenError";
  constructor(
    message: string,
    readonly reason: "permission" | "workflows-permission" | "github",
  ) {
    super(message);
  }
}

/** The token for one push (scopedToken with pushPermissions), GitHub's refusals in plain words. */
export async function pushToken(
  app: Octokit,
  s: TokenRepo & { workflows: boolean },
): Promise<string> {
  try {
    return await scopedToken(app, {
      installationId: s.installationId,
      repo: s.repo,
      repoId: s.repoId,
      permissions: pushPermissions(s.workflows),
    });
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 422 || status === 403)
      throw s.workflows
        ? new PushTokenError(
            "the app may not change workflows in this repository: its installation does not grant the `workflows` permission",
            "workflows-permission",
          )
        : new PushTokenError(
            "the app's installation does not grant `contents: write` on this repository; an owner must accept the app's updated permissions",
            "permission",
          );
    throw new PushTokenError(
      `GitHub would not make a push token: ${(err as Error).message}`,
      "github",
    );
  }
}
