import type { RepoPermission } from "../config/repo-config.js";
import { httpStatusOf } from "./errors.js";
import type { GitHub, RepoRef } from "./types.js";

export type Permission = RepoPermission | "none";

const RANK: Record<Permission, number> = {
  none: 0,
  read: 1,
  triage: 2,
  write: 3,
  maintain: 4,
  admin: 5,
};

export function permissionAtLeast(have: Permission, need: RepoPermission): boolean {
  return RANK[have] >= RANK[need];
}

/**
 * A user's permission on a repository. `role_name` tells triage and maintain apart (the older
 * `permission` field folds them into read and write); a custom role falls back to `permission`.
 * Someone GitHub does not know as a collaborator (404) has none.
 */
export async function getPermission(
  octokit: GitHub,
  where: RepoRef & { username: string },
): Promise<Permission> {
  try {
    const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({
      owner: where.owner,
      repo: where.repo,
      username: where.username,
    });
    const role = (data as { role_name?: string }).role_name;
    if (role && role in RANK) return role as Permission;
    return data.permission in RANK ? (data.permission as Permission) : "none";
  } catch (err) {
    if (httpStatusOf(err) === 404) return "none";
    throw err;
  }
}
