/**
 * The rules a change must pass before Tether pushes it, and the secret scan, as tables: each
 * row is a change that must be refused (and why) or let through.
 */
import { describe, expect, it } from "vitest";
import { checkPublish, touchesWorkflows, type PublishFacts } from "../../src/publish/checks.js";
import type { FileChange } from "../../src/publish/mirror-git.js";
import { scanDiff, scanMessage } from "../../src/publish/secret-scan.js";
import { conversationBranch, publishTarget } from "../../src/publish/publisher.js";
import { repoIdOf } from "../helpers/seed.js";

const file = (path: string, bytes = 10, status = "M"): FileChange => ({
  path,
  status,
  mode: "100644",
  bytes,
  added: 1,
  removed: 0,
});

const base: PublishFacts = {
  branch: "tether/15-tether",
  allowedBranch: "tether/15-tether",
  defaultBranch: "main",
  protectedBranch: false,
  files: [file("src/a.ts")],
  secrets: [],
  limits: { maxFiles: 3, maxBytes: 100, workflows: false, protectedPaths: [".github/**"] },
};
const guarding = (...protectedPaths: string[]) => ({ ...base.limits, protectedPaths });

const ROWS: Array<{ name: string; facts: Partial<PublishFacts>; refused: string[] }> = [
  { name: "an ordinary change", facts: {}, refused: [] },
  {
    name: "a push to the default branch",
    facts: { branch: "main", allowedBranch: "main" },
    refused: ["default-branch"],
  },
  {
    name: "a branch other than the key's (a name trick)",
    facts: { branch: "tether/15-tether/../main" },
    refused: ["bad-branch"],
  },
  { name: "a protected branch", facts: { protectedBranch: true }, refused: ["protected-branch"] },
  {
    name: "a workflow file, not allowed",
    facts: { files: [file(".github/workflows/ci.yml")] },
    refused: ["workflow"],
  },
  {
    name: "a workflow file in another case (GitHub's paths are case-sensitive; refuse anyway)",
    facts: { files: [file(".GitHub/Workflows/ci.yml")] },
    refused: ["workflow"],
  },
  {
    name: "a deleted workflow file",
    facts: { files: [file(".github/workflows/ci.yml", 0, "D")] },
    refused: ["workflow"],
  },
  {
    name: "a workflow file, allowed by config",
    facts: {
      files: [file(".github/workflows/ci.yml")],
      limits: { ...base.limits, workflows: true },
    },
    refused: [],
  },
  {
    name: "a file beside the workflows directory (protected by the default .github/**)",
    facts: { files: [file(".github/workflows.md"), file(".github/dependabot.yml")] },
    refused: ["protected-path"],
  },
  {
    name: "a workflow with publish.workflows: true, and another .github file (still protected)",
    facts: {
      files: [file(".github/workflows/ci.yml"), file(".github/CODEOWNERS")],
      limits: { ...base.limits, workflows: true },
    },
    refused: ["protected-path"],
  },
  {
    name: "the repository's own list: package.json at the root",
    facts: { files: [file("package.json")], limits: guarding("package.json", "scripts/**") },
    refused: ["protected-path"],
  },
  {
    name: "the repository's own list: a package.json deeper is not the root one",
    facts: { files: [file("web/package.json")], limits: guarding("package.json") },
    refused: [],
  },
  {
    name: "the repository's own list: anything under scripts/, deleted",
    facts: { files: [file("scripts/ci/run.sh", 0, "D")], limits: guarding("scripts/**") },
    refused: ["protected-path"],
  },
  {
    name: "a list without .github/**: workflows are the app's permission's to refuse",
    facts: { files: [file(".github/workflows/ci.yml")], limits: guarding("Makefile") },
    refused: [],
  },
  {
    name: "no protected paths",
    facts: { files: [file(".github/tether.yml")], limits: guarding() },
    refused: [],
  },
  {
    name: "one file too many",
    facts: { files: [file("a"), file("b"), file("c"), file("d")] },
    refused: ["too-many-files"],
  },
  { name: "exactly at the byte cap", facts: { files: [file("a", 100)] }, refused: [] },
  {
    name: "a byte over the cap",
    facts: { files: [file("a", 60), file("b", 41)] },
    refused: ["too-large"],
  },
  {
    name: "a secret",
    facts: { secrets: [{ path: "src/a.ts", line: 3, kind: "a GitHub token" }] },
    refused: ["secret"],
  },
  {
    name: "everything at once, the most basic first",
    facts: {
      branch: "main",
      allowedBranch: "main",
      protectedBranch: true,
      files: [file(".github/workflows/x.yml", 500), file("a"), file("b"), file("c")],
      secrets: [{ path: null, line: 1, kind: "a private key" }],
    },
    refused: [
      "default-branch",
      "protected-branch",
      "workflow",
      "too-many-files",
      "too-large",
      "secret",
    ],
  },
];

describe("checkPublish", () => {
  it.each(ROWS)("$name", ({ facts, refused }) => {
    expect(checkPublish({ ...base, ...facts }).map((r) => r.reason)).toEqual(refused);
  });

  it("says where a secret is and what it looks like, never the secret", () => {
    const [r] = checkPublish({
      ...base,
      secrets: [
        { path: "src/config.js", line: 2, kind: "a GitHub token" },
        { path: null, line: 4, kind: "an AWS access key" },
      ],
    });
    expect(r?.message).toBe(
      "the change holds what looks like a secret (a GitHub token, an AWS access key) in `src/config.js` line 2, the commit message (line 4). Remove it (and rotate it if it is real), then ask again.",
    );
  });

  it("names the protected files and the setting that protects them", () => {
    const [r] = checkPublish({ ...base, files: [file(".github/workflows/release.yml")] });
    expect(r?.message).toContain("`.github/workflows/release.yml`");
    expect(r?.message).toContain("`changes.protectedPaths`");
    expect(r?.message).toContain("`.github/**`");
    expect(r?.message).toContain("`workflows` permission");
    expect(touchesWorkflows([file(".github/workflows/a.yml"), file("b")])).toEqual([
      ".github/workflows/a.yml",
    ]);
  });
});

const GH_TOKEN = `ghp_${"a1B2c3D4e5".repeat(4).slice(0, 36)}`;
const KNOWN = "db-password-0123456789";

const diff = (path: string, added: string[], from = 1) =>
  [
    `diff --git a/${path} b/${path}`,
    "index 0000000..1111111 100644",
    `--- a/${path}`,
    `+++ b/${path}`,
    `@@ -${from},1 +${from},${added.length + 1} @@`,
    " unchanged line",
    ...added.map((l) => `+${l}`),
  ].join("\n");

describe("the secret scan", () => {
  it.each([
    { name: "a GitHub token", line: `token = "${GH_TOKEN}"`, kind: "a GitHub token" },
    { name: "a fine-grained token", line: `github_pat_${"x".repeat(30)}`, kind: "a GitHub token" },
    {
      name: "an Anthropic key",
      line: "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijkl",
      kind: "an Anthropic API key",
    },
    { name: "a private key", line: "-----BEGIN RSA PRIVATE KEY-----", kind: "a private key" },
    {
      name: "an AWS key",
      line: "aws_access_key_id = AKIAABCDEFGHIJKLMNOP",
      kind: "an AWS access key",
    },
    {
      name: "credentials in a URL",
      line: "https://x-access-token:abc@github.com/o/r",
      kind: "git credentials",
    },
    {
      name: "a value Tether holds",
      line: `postgres://u:${KNOWN}@h/db`,
      kind: "a secret Tether holds",
    },
  ])("finds $name in an added line, with its file and line", ({ line, kind }) => {
    expect(scanDiff(diff("src/x.js", ["ok", line], 10), [KNOWN])).toEqual([
      { path: "src/x.js", line: 12, kind },
    ]);
  });

  it("ignores removed and unchanged lines, and ordinary text", () => {
    const d = [
      "diff --git a/a b/a",
      "--- a/a",
      "+++ b/a",
      "@@ -1,2 +1,1 @@",
      `-old = "${GH_TOKEN}"`,
      ` kept = "${KNOWN}"`,
      "+const sha = 'a94a8fe5ccb19ba61c4c0873d391e987982fbbd3';",
    ].join("\n");
    expect(scanDiff(d, [KNOWN])).toEqual([]);
  });

  it("follows files and hunks through a multi-file diff", () => {
    const d = `${diff("a.txt", ["fine"])}\n${diff("b/c.txt", ["fine", `k=${GH_TOKEN}`], 5)}`;
    expect(scanDiff(d, [])).toEqual([{ path: "b/c.txt", line: 7, kind: "a GitHub token" }]);
  });

  it("finds a line of a multi-line secret (a private key) printed on its own", () => {
    const pem = [
      "-----BEGIN PRIVATE KEY-----",
      "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
      "-----END PRIVATE KEY-----",
    ].join("\n");
    expect(scanDiff(diff("k.txt", ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"]), [pem])).toHaveLength(1);
  });

  it("scans commit messages", () => {
    expect(scanMessage(`Fix\n\nused ${GH_TOKEN} to test`, [])).toEqual([
      { path: null, line: 3, kind: "a GitHub token" },
    ]);
  });
});

describe("where a turn's changes go", () => {
  const key = {
    repoId: repoIdOf("octo/widgets"),
    repo: "octo/widgets",
    issueNumber: 15,
    agent: "tether",
  };
  const issue = { title: "t", body: "", author: "a", url: "u", isPullRequest: false };

  it.each([
    {
      name: "an issue: its conversation branch",
      pr: undefined,
      kind: "conversation",
      branch: "tether/15-tether",
    },
    {
      name: "a pull request from this repository: its head",
      pr: { headRef: "fix", baseRef: "main", headSha: "x", headRepo: "Octo/Widgets" },
      kind: "pull-head",
      branch: "fix",
    },
    {
      name: "a pull request from a fork: nothing pushed",
      pr: { headRef: "main", baseRef: "main", headSha: "x", headRepo: "mallory/widgets" },
      kind: "fork",
      branch: "main",
    },
    {
      name: "a pull request whose fork was deleted: treated as a fork",
      pr: { headRef: "fix", baseRef: "main", headSha: "x", headRepo: null },
      kind: "fork",
      branch: "fix",
    },
  ])("$name", ({ pr, kind, branch }) => {
    const t = publishTarget(key, {
      ...issue,
      ...(pr ? { isPullRequest: true, pullRequest: pr } : {}),
    });
    expect(t).toMatchObject({ kind, branch });
  });

  it("names one stable branch per issue and agent", () => {
    expect(conversationBranch(15, "tether")).toBe("tether/15-tether");
    expect(conversationBranch(15, "reviewer")).toBe("tether/15-reviewer");
  });
});
