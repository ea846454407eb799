import { describe, expect, it } from "vitest";
import { AccessConfig } from "../../src/config/repo-config.js";
import { decideAccess, type Author } from "../../src/intake/access.js";
import type { Permission } from "../../src/github/permission.js";

const access = (over: Partial<AccessConfig> = {}) => ({ ...AccessConfig.parse({}), ...over });
const user = (login: string): Author => ({ login, type: "User" });
const bot = (login: string): Author => ({ login, type: "Bot" });

describe("decideAccess", () => {
  it.each<[string, Author, AccessConfig, Permission | undefined, ReturnType<typeof decideAccess>]>([
    [
      "a user: look up their permission first",
      user("alice"),
      access(),
      undefined,
      { lookup: true },
    ],
    [
      "write meets the default",
      user("alice"),
      access(),
      "write",
      { allowed: true, via: "permission" },
    ],
    ["admin meets it", user("alice"), access(), "admin", { allowed: true, via: "permission" }],
    [
      "triage does not",
      user("alice"),
      access(),
      "triage",
      { allowed: false, reason: "alice has triage permission; access.minPermission is write" },
    ],
    [
      "read does not",
      user("alice"),
      access(),
      "read",
      { allowed: false, reason: "alice has read permission; access.minPermission is write" },
    ],
    [
      "none does not",
      user("alice"),
      access(),
      "none",
      { allowed: false, reason: "alice has none permission; access.minPermission is write" },
    ],
    [
      "triage meets a triage minimum",
      user("alice"),
      access({ minPermission: "triage" }),
      "triage",
      { allowed: true, via: "permission" },
    ],
    [
      "write misses a maintain minimum",
      user("alice"),
      access({ minPermission: "maintain" }),
      "write",
      { allowed: false, reason: "alice has write permission; access.minPermission is maintain" },
    ],
    [
      "an allow-listed user needs no lookup",
      user("Alice"),
      access({ allowUsers: ["alice"] }),
      undefined,
      { allowed: true, via: "allowUsers" },
    ],
    [
      "an allow-listed user with no permission",
      user("alice"),
      access({ allowUsers: ["ALICE"] }),
      "none",
      { allowed: true, via: "allowUsers" },
    ],
    [
      "a bot is refused without a lookup",
      bot("dependabot[bot]"),
      access(),
      undefined,
      { allowed: false, reason: "dependabot[bot] is a bot and not in access.allowBots" },
    ],
    [
      "a bot with admin is still refused",
      bot("dependabot[bot]"),
      access(),
      "admin",
      { allowed: false, reason: "dependabot[bot] is a bot and not in access.allowBots" },
    ],
    [
      "a bot on allowUsers is still refused",
      bot("renovate[bot]"),
      access({ allowUsers: ["renovate"] }),
      undefined,
      { allowed: false, reason: "renovate[bot] is a bot and not in access.allowBots" },
    ],
    [
      "an allow-listed bot",
      bot("renovate[bot]"),
      access({ allowBots: ["renovate[bot]"] }),
      undefined,
      { allowed: true, via: "allowBots" },
    ],
    [
      "an allow-listed bot without the suffix",
      bot("renovate[bot]"),
      access({ allowBots: ["Renovate"] }),
      undefined,
      { allowed: true, via: "allowBots" },
    ],
    [
      "a [bot] login typed as a user is a bot",
      user("sneaky[bot]"),
      access(),
      "admin",
      { allowed: false, reason: "sneaky[bot] is a bot and not in access.allowBots" },
    ],
  ])("%s", (_name, author, cfg, permission, expected) => {
    expect(decideAccess(author, cfg, permission)).toEqual(expected);
  });
});
