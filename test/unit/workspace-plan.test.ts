import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cloneUrlFor, gitAuthEnv, redactToken } from "../../src/github/git-auth.js";
import {
  planUpdate,
  type CheckoutState,
  type UpdatePlan,
} from "../../src/workspace/checkout-state.js";
import {
  classifyGitFailure,
  isValidBranchName,
  workspacePath,
  WorkspaceError,
} from "../../src/workspace/workspace.js";

const base: CheckoutState = {
  currentBranch: "main",
  targetBranch: "main",
  targetExists: true,
  trackedChanges: false,
  operationInProgress: false,
  ahead: 0,
  behind: 0,
};

describe("planUpdate", () => {
  const rows: Array<{
    name: string;
    state: Partial<CheckoutState>;
    plan: UpdatePlan["action"];
    reason?: string;
  }> = [
    { name: "nothing new upstream", state: {}, plan: "up-to-date" },
    { name: "local commits, nothing new upstream", state: { ahead: 2 }, plan: "up-to-date" },
    { name: "dirty but nothing new upstream", state: { trackedChanges: true }, plan: "up-to-date" },
    { name: "behind and clean", state: { behind: 3 }, plan: "fast-forward" },
    {
      name: "behind with modified files",
      state: { behind: 1, trackedChanges: true },
      plan: "leave",
      reason: "uncommitted-changes",
    },
    { name: "diverged", state: { behind: 1, ahead: 1 }, plan: "leave", reason: "diverged" },
    {
      name: "on another branch",
      state: { currentBranch: "agent-fix", behind: 1 },
      plan: "leave",
      reason: "other-branch",
    },
    {
      name: "detached",
      state: { currentBranch: null, behind: 1 },
      plan: "leave",
      reason: "detached",
    },
    {
      name: "rebase under way",
      state: { behind: 1, operationInProgress: true },
      plan: "leave",
      reason: "operation-in-progress",
    },
    {
      name: "target branch missing (renamed PR head), clean",
      state: { currentBranch: "old-name", targetBranch: "new-name", targetExists: false },
      plan: "create-branch",
    },
    {
      name: "target branch missing, modified files",
      state: {
        currentBranch: "old-name",
        targetBranch: "new-name",
        targetExists: false,
        trackedChanges: true,
      },
      plan: "leave",
      reason: "uncommitted-changes",
    },
    {
      name: "target branch missing, detached",
      state: { currentBranch: null, targetBranch: "new-name", targetExists: false },
      plan: "leave",
      reason: "detached",
    },
  ];
  it.each(rows)("$name → $plan", ({ state, plan, reason }) => {
    const got = planUpdate({ ...base, ...state });
    expect(got.action).toBe(plan);
    if (reason) expect(got).toMatchObject({ reason });
  });

  it("never plans a move that could lose work", () => {
    const state = fc.record({
      currentBranch: fc.constantFrom<string | null>("main", "other", null),
      targetBranch: fc.constant("main"),
      targetExists: fc.boolean(),
      trackedChanges: fc.boolean(),
      operationInProgress: fc.boolean(),
      ahead: fc.nat(3),
      behind: fc.nat(3),
    });
    fc.assert(
      fc.property(state, (s) => {
        const plan = planUpdate(s);
        if (plan.action === "fast-forward") {
          expect(s.trackedChanges || s.operationInProgress || s.ahead > 0).toBe(false);
          expect(s.currentBranch).toBe(s.targetBranch);
        }
        if (plan.action === "create-branch") {
          expect(s.targetExists || s.trackedChanges || s.currentBranch === null).toBe(false);
        }
      }),
    );
  });
});

describe("workspacePath", () => {
  const root = "/srv/ws";
  it("is <root>/_repos/<repository id>/issue-<n>/<agent>: by id, whatever the name", () => {
    expect(
      workspacePath(root, { repoId: 42, repo: "Octo/Widgets", issueNumber: 7, agent: "tether" }),
    ).toBe("/srv/ws/_repos/42/issue-7/tether");
    // A rename keeps the directory; another repository under the same name gets another.
    expect(
      workspacePath(root, { repoId: 42, repo: "octo/gadgets", issueNumber: 7, agent: "tether" }),
    ).toBe("/srv/ws/_repos/42/issue-7/tether");
    expect(
      workspacePath(root, { repoId: 43, repo: "Octo/Widgets", issueNumber: 7, agent: "tether" }),
    ).toBe("/srv/ws/_repos/43/issue-7/tether");
  });

  it("encodes characters outside [A-Za-z0-9._-] instead of dropping them", () => {
    expect(workspacePath(root, { repoId: 5, repo: "o/r", issueNumber: 1, agent: "a/b" })).toBe(
      "/srv/ws/_repos/5/issue-1/a%2Fb",
    );
    expect(workspacePath(root, { repoId: 5, repo: "o/r", issueNumber: 1, agent: "a%2Fb" })).toBe(
      "/srv/ws/_repos/5/issue-1/a%252Fb",
    );
  });

  it.each([
    { repoId: 0, repo: "octo/widgets", issueNumber: 1, agent: "a" },
    { repoId: -3, repo: "octo/widgets", issueNumber: 1, agent: "a" },
    { repoId: 1.5, repo: "octo/widgets", issueNumber: 1, agent: "a" },
    { repoId: Number.NaN, repo: "octo/widgets", issueNumber: 1, agent: "a" },
    { repoId: 1, repo: "octo/widgets", issueNumber: 0, agent: "a" },
    { repoId: 1, repo: "octo/widgets", issueNumber: 1.5, agent: "a" },
    { repoId: 1, repo: "octo/widgets", issueNumber: 1, agent: ".." },
    { repoId: 1, repo: "octo/widgets", issueNumber: 1, agent: "." },
    { repoId: 1, repo: "octo/widgets", issueNumber: 1, agent: "" },
    { repoId: 1, repo: "octo/widgets", issueNumber: 1, agent: "\ud800" },
  ])("refuses %o", (key) => {
    expect(() => workspacePath(root, key)).toThrow(WorkspaceError);
  });

  it("gives two different keys two different directories, always inside the root", () => {
    const key = fc.record({
      repoId: fc.integer({ min: 1, max: 4 }),
      repo: fc.constantFrom("octo/widgets", "octo/widgets2", "other/widgets", "octo/.github"),
      issueNumber: fc.integer({ min: 1, max: 5 }),
      agent: fc
        .string({ unit: "binary", minLength: 1, maxLength: 6 })
        .filter((a) => a !== "." && a !== ".." && !/\p{Surrogate}/u.test(a)),
    });
    fc.assert(
      fc.property(key, key, (a, b) => {
        const pa = workspacePath(root, a);
        const pb = workspacePath(root, b);
        expect(path.relative(root, pa).startsWith("..")).toBe(false);
        // The name plays no part: the id, the issue and the agent make the key.
        const same =
          a.repoId === b.repoId && a.issueNumber === b.issueNumber && a.agent === b.agent;
        expect(pa === pb).toBe(same);
      }),
      { numRuns: 200 },
    );
  });
});

describe("isValidBranchName", () => {
  it.each([
    ["main", true],
    ["feature/login", true],
    ["fix-1.2", true],
    ["-rf", false],
    ["a..b", false],
    ["a b", false],
    ["a~1", false],
    ["a:b", false],
    ["a/", false],
    ["/a", false],
    ["a.lock", false],
    [".hidden", false],
    ["a//b", false],
    ["a@{1}", false],
    ["@", false],
    ["tab\tname", false],
  ])("%s → %s", (name, ok) => {
    expect(isValidBranchName(name)).toBe(ok);
  });
});

describe("classifyGitFailure", () => {
  it.each([
    ["fatal: repository 'https://github.com/o/r.git/' not found", "not-found"],
    ["remote: Repository not found.\nfatal: repository 'x' not found", "not-found"],
    ["fatal: Authentication failed for 'https://github.com/o/r.git/'", "auth"],
    ["fatal: could not read Username for 'https://github.com': terminal prompts disabled", "auth"],
    ["fatal: unable to access 'x': The requested URL returned error: 403", "auth"],
    ["fatal: couldn't find remote ref refs/pull/9/head", "missing-ref"],
    ["fatal: unable to access 'x': Could not resolve host: github.example", "network"],
    [
      "fatal: unable to access 'http://127.0.0.1:1/o/r.git/': Failed to connect to 127.0.0.1 port 1: Connection refused",
      "network",
    ],
    ["fatal: unable to access 'x': The requested URL returned error: 502", "unavailable"],
    ["fatal: something else entirely", "git-failed"],
  ])("%s → %s", (stderr, kind) => {
    expect(classifyGitFailure(stderr)).toBe(kind);
  });
});

describe("git auth", () => {
  it("builds clone URLs for github.com and for GHE_HOST", () => {
    expect(cloneUrlFor({ GHE_HOST: undefined, GHE_PROTOCOL: "https" }, "octo/widgets")).toBe(
      "https://github.com/octo/widgets.git",
    );
    expect(cloneUrlFor({ GHE_HOST: "127.0.0.1:8080", GHE_PROTOCOL: "http" }, "octo/widgets")).toBe(
      "http://127.0.0.1:8080/octo/widgets.git",
    );
    expect(() => cloneUrlFor({ GHE_HOST: undefined, GHE_PROTOCOL: "https" }, "octo/../x")).toThrow(
      /not a repository name/,
    );
  });

  it("scopes the header to the clone URL's origin and keeps the token out of argv-style config", () => {
    const env = gitAuthEnv("https://github.com/octo/widgets.git", "ghs_abc");
    expect(env.GIT_CONFIG_KEY_0).toBe("http.https://github.com/.extraHeader");
    expect(env.GIT_CONFIG_VALUE_0).toBe(
      `Authorization: Basic ${Buffer.from("x-access-token:ghs_abc").toString("base64")}`,
    );
    expect(env.GIT_TERMINAL_PROMPT).toBe("0");
  });

  it("redacts the token, its Basic form and any Authorization header", () => {
    const token = "ghs_0123456789abcdefghijABCDEFGHIJ0123";
    const basic = Buffer.from(`x-access-token:${token}`).toString("base64");
    const text = `a ${token} b ${basic} c\nAuthorization: Bearer xyz\nother ghs_ZZZZZZZZZZZZZZZZZZZZZZZZ`;
    const out = redactToken(text, token);
    expect(out).not.toContain(token);
    expect(out).not.toContain(basic);
    expect(out).not.toContain("xyz");
    expect(out).not.toContain("ghs_ZZZZ");
  });
});
