import { describe, expect, it } from "vitest";
import { RepoHints } from "../../src/intake/repo-hints.js";

describe("RepoHints.permissionLikelyNeeded", () => {
  const hints = new RepoHints();
  hints.remember("octo/widgets", {
    mentions: ["@tether", "@Reviewer"],
    allowUsers: ["Guest"],
    repoFile: true,
  });

  it.each([
    ["a repository not read yet", "octo/other", ["tether"], "alice", false],
    ["an agent's mention", "octo/widgets", ["tether"], "alice", true],
    ["another agent's mention, any case", "octo/widgets", ["REVIEWER"], "alice", true],
    ["only people mentioned", "octo/widgets", ["bob", "carol"], "alice", false],
    ["an allow-listed author, any case", "octo/widgets", ["tether"], "guest", false],
  ])("%s", (_name, repo, names, login, expected) => {
    expect(hints.permissionLikelyNeeded(repo, names, login)).toBe(expected);
  });

  it("follows a renamed agent: the old mention no longer counts", () => {
    const h = new RepoHints();
    h.remember("o/r", { mentions: ["@tether"], allowUsers: [], repoFile: true });
    h.remember("o/r", { mentions: ["@helper"], allowUsers: [], repoFile: true });
    expect(h.permissionLikelyNeeded("o/r", ["tether"], "alice")).toBe(false);
    expect(h.permissionLikelyNeeded("o/r", ["helper"], "alice")).toBe(true);
  });

  it("forgets the least recently read repository beyond its bound", () => {
    const h = new RepoHints(2);
    h.remember("o/a", { mentions: ["@tether"], allowUsers: [], repoFile: true });
    h.remember("o/b", { mentions: ["@tether"], allowUsers: [], repoFile: true });
    h.remember("o/a", { mentions: ["@tether"], allowUsers: [], repoFile: true }); // read again: now the newest
    h.remember("o/c", { mentions: ["@tether"], allowUsers: [], repoFile: true });
    expect(h.permissionLikelyNeeded("o/a", ["tether"], "x")).toBe(true);
    expect(h.permissionLikelyNeeded("o/b", ["tether"], "x")).toBe(false);
    expect(h.permissionLikelyNeeded("o/c", ["tether"], "x")).toBe(true);
  });
});

describe("RepoHints.orgFileLikely", () => {
  it("is true only for a repository read before without a file of its own", () => {
    const h = new RepoHints();
    h.remember("o/own", { mentions: ["@tether"], allowUsers: [], repoFile: true });
    h.remember("o/org", { mentions: ["@tether"], allowUsers: [], repoFile: false });
    expect(h.orgFileLikely("o/own")).toBe(false);
    expect(h.orgFileLikely("o/org")).toBe(true);
    expect(h.orgFileLikely("o/unknown")).toBe(false);
  });
});
