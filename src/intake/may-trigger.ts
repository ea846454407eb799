/**
 * Who may make a request: the one access check of every trigger (a comment's author, an
 * editor, whoever labels, assigns or reviews). Tether's own bot never may, whatever
 * `access.allowBots` says: a review or line comment Tether posted would otherwise ask an agent
 * again (#38).
 */
import type { AccessConfig } from "../config/repo-config.js";
import { getPermission, type Permission } from "../github/permission.js";
import type { GitHub, RepoRef } from "../github/types.js";
import { decideAccess, sameLogin, type Author } from "./access.js";

export interface MayTriggerOptions {
  octokit: GitHub;
  where: RepoRef;
  access: AccessConfig;
  /** Tether's own bot login (`<slug>[bot]`), asked only when an allow-listed bot asks. */
  appLogin?: (() => Promise<string>) | undefined;
  /** The permission lookup, when the caller started it early. */
  permission?: Promise<Permission> | undefined;
}

/** Why `who` may not make a request here, or null when they may. */
export async function refusalOf(who: Author, o: MayTriggerOptions): Promise<string | null> {
  let decision = decideAccess(who, o.access);
  if ("lookup" in decision)
    decision = decideAccess(
      who,
      o.access,
      await (o.permission ?? getPermission(o.octokit, { ...o.where, username: who.login })),
    );
  if ("lookup" in decision) return "no permission";
  if (!decision.allowed) return decision.reason;
  if (decision.via === "allowBots" && o.appLogin && sameLogin(who.login, await o.appLogin()))
    return `${who.login} is Tether's own bot`;
  return null;
}
