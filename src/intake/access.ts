import type { AccessConfig } from "../config/repo-config.js";
import { permissionAtLeast, type Permission } from "../github/permission.js";

export interface Author {
  login: string;
  /** GitHub's account type: "User", "Bot", "Organization". */
  type: string;
}

export type AccessDecision =
  | { allowed: true; via: "allowUsers" | "allowBots" | "permission" }
  | { allowed: false; reason: string }
  /** A human not on the allow list: their repository permission decides. */
  | { lookup: true };

/**
 * May this author trigger an agent? Bots only when allow-listed (Tether's own comments are
 * dropped before this: they never trigger). Humans on `allowUsers` always; others when their
 * permission on the repository is at least `minPermission`. Call without `permission` first;
 * `{lookup: true}` means: fetch it and call again.
 */
export function decideAccess(
  author: Author,
  access: AccessConfig,
  permission?: Permission,
): AccessDecision {
  const login = normalise(author.login);
  if (isBot(author)) {
    if (access.allowBots.some((b) => normalise(b) === login))
      return { allowed: true, via: "allowBots" };
    return { allowed: false, reason: `${author.login} is a bot and not in access.allowBots` };
  }
  if (access.allowUsers.some((u) => normalise(u) === login))
    return { allowed: true, via: "allowUsers" };
  if (permission === undefined) return { lookup: true };
  if (permissionAtLeast(permission, access.minPermission))
    return { allowed: true, via: "permission" };
  return {
    allowed: false,
    reason: `${author.login} has ${permission} permission; access.minPermission is ${access.minPermission}`,
  };
}

/** GitHub's account type says so, or the login ends in `[bot]`. */
export function isBot(author: Author): boolean {
  return author.type === "Bot" || /\[bot\]$/i.test(author.login);
}

/** Whether two logins name one account (without case, with or without `[bot]`). */
export function sameLogin(a: string, b: string): boolean {
  return normalise(a) === normalise(b);
}

/** Logins compare without case and without a `[bot]` suffix (`renovate` = `renovate[bot]`). */
function normalise(login: string): string {
  return login.toLowerCase().replace(/\[bot\]$/, "");
}
