/** tokenScope (src/github/conditional-requests.ts): which tokens share a pinned answer (#38). */
import { describe, expect, it } from "vitest";
import { tokenScope } from "../../src/github/conditional-requests.js";

type Grant = Parameters<typeof tokenScope>[0];

const turn = {
  repositorySelection: "selected",
  repositoryIds: [42],
  repositoryNames: ["widgets"],
  permissions: { issues: "write", pull_requests: "write", contents: "read", metadata: "read" },
};
const installation = {
  repositorySelection: "all",
  permissions: { issues: "write", pull_requests: "write", contents: "write", metadata: "read" },
};

const rows: Array<{ why: string; a: Grant; b: Grant; same: boolean }> = [
  { why: "the next hour's token of the same grant", a: turn, b: turn, same: true },
  {
    why: "the same grant listed in another order",
    a: turn,
    b: {
      ...turn,
      permissions: {
        metadata: "read",
        contents: "read",
        pull_requests: "write",
        issues: "write",
      },
    },
    same: true,
  },
  { why: "another repository", a: turn, b: { ...turn, repositoryIds: [43] }, same: false },
  { why: "the whole installation", a: turn, b: installation, same: false },
  {
    why: "another permission level",
    a: turn,
    b: { ...turn, permissions: { ...turn.permissions, contents: "write" } },
    same: false,
  },
  {
    why: "one repository more",
    a: turn,
    b: { ...turn, repositoryIds: [42, 43], repositoryNames: ["widgets", "gadgets"] },
    same: false,
  },
  {
    why: "named repositories, not ids",
    a: { ...installation, repositorySelection: "selected", repositoryNames: ["Widgets"] },
    b: { ...installation, repositorySelection: "selected", repositoryNames: ["gadgets"] },
    same: false,
  },
];

describe("tokenScope", () => {
  it.each(rows)("$why: same scope $same", ({ a, b, same }) => {
    expect(tokenScope(a, "ghs_one") === tokenScope(b, "ghs_two")).toBe(same);
  });

  it("a token whose grant is unknown is a scope of its own", () => {
    expect(tokenScope({}, "ghs_one")).not.toBe(tokenScope({}, "ghs_two"));
    expect(tokenScope({}, "ghs_one")).toBe(tokenScope({}, "ghs_one"));
    expect(tokenScope({ permissions: {} }, "ghs_one")).not.toContain("ghs_one");
  });
});
