/**
 * Tokens for one push: an installation token minted for one repository and the one permission
 * a push needs (`contents: write`, plus `workflows: write` only when the change touches
 * workflows and the repository's config allows it). The installation's own token, which the
 * runner uses for everything else, can read every repository of the installation and write
 * issues and pull requests; a push never needs that, so it never gets it. Minted right before
 * the push, used once, revoked right after.
 */
import type { ProbotOctokit } from "probot";

type Octokit = InstanceType<typeof ProbotOctokit>;

export interface PushTokenRequest {
  installationId: number;
  /** The repository's name (without the owner): the only one the token can reach. */
  repo: string;
  /** Also `workflows: write`: the push changes files under .github/workflows/. */
  workflows: boolean;
}

export interface PushToken {
  token: string;
  /** What GitHub says the token may do; checked, so a wider token is never used. */
  permissions: Record<string, string>;
  /** Revoke it (never throws: it expires within the hour anyway). */
  revoke(): Promise<void>;
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

/**
 * Mint the token. `octokit` is the app's own (JWT) Octokit; `revokeWith` revokes with the
 * token itself (DELETE /installation/token).
 */
export async function mintPushToken(
  octokit: Octokit,
  req: PushTokenRequest,
  revokeWith: (token: string) => Promise<void>,
): Promise<PushToken> {
  const permissions: Record<string, "write"> = { contents: "write" };
  if (req.workflows) permissions.workflows = "write";
  let data: { token: string; permissions?: Record<string, string | undefined> };
  try {
    ({ data } = await octokit.rest.apps.createInstallationAccessToken({
      installation_id: req.installationId,
      repositories: [req.repo],
      permissions,
    }));
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 422 || status === 403) {
      throw req.workflows
        ? new PushTokenError(
            "the app may not change workflows in this repository: its installation does not grant the `workflows` permission",
            "workflows-permission",
          )
        : new PushTokenError(
            "the app's installation does not grant `contents: write` on this repository; an owner must accept the app's updated permissions",
            "permission",
          );
    }
    throw new PushTokenError(
      `GitHub would not make a push token: ${(err as Error).message}`,
      "github",
    );
  }
  const granted: Record<string, string> = {};
  for (const [k, v] of Object.entries(data.permissions ?? {})) if (v) granted[k] = v;
  const extra = Object.keys(granted).filter((k) => !(k in permissions) && k !== "metadata");
  if (granted.contents !== "write" || extra.length) {
    await revokeWith(data.token).catch(() => {});
    throw new PushTokenError(
      `GitHub made a push token with other permissions than asked (${JSON.stringify(granted)}); not using it`,
      "github",
    );
  }
  return {
    token: data.token,
    permissions: granted,
    revoke: () => revokeWith(data.token).catch(() => {}),
  };
}
