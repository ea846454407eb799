/**
 * Issue 15's end-to-end scenarios: the agent's work leaves its workspace as commits on the
 * conversation's branch and a pull request. The built app as a process, real Postgres, the real
 * Claude CLI in its sandbox editing files because the fake Messages API scripts `Write` tool
 * calls, and the GitHub stand-in serving git receive-pack and the pulls routes.
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import { lastUserText, replies, userTexts, type FakeReply } from "../helpers/fake-anthropic.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
  planner:
    model: claude-sonnet-4-5
    permissionMode: plan
publish:
  link: closes
`;

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ pool: db.pool, databaseUrl: db.url, config: CONFIG });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

function newIssue(title: string): number {
  return stack.gh.addIssue({ repo: REPO, title, body: `Body of "${title}".`, user: "alice" })
    .number as number;
}

/** The model writes `files` (one Write call each), then answers `text`. */
function agentWrites(files: Record<string, string>, text: string): FakeReply[] {
  return [
    ...Object.entries(files).map(([p, content]) =>
      replies.toolUse("Write", { file_path: `/workspace/${p}`, content }),
    ),
    replies.text(text),
  ];
}

/** A file's content at `ref` in the stand-in's repository (undefined: absent). */
function fileAt(ref: string, file: string): string | undefined {
  try {
    return execFileSync("git", ["-C", stack.gh.barePath(REPO), "show", `${ref}:${file}`], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch {
    return undefined;
  }
}

function parents(sha: string): string[] {
  return execFileSync(
    "git",
    ["-C", stack.gh.barePath(REPO), "rev-list", "--parents", "-n", "1", sha],
    { encoding: "utf8" },
  )
    .trim()
    .split(" ")
    .slice(1);
}

function commitOf(sha: string, format: string): string {
  return execFileSync(
    "git",
    ["-C", stack.gh.barePath(REPO), "show", "-s", `--format=${format}`, sha],
    { encoding: "utf8" },
  ).trim();
}

function answerOf(thread: number, task: Record<string, unknown>): string {
  const posted = stack.taskComments(thread, task.id as number);
  expect(posted).toHaveLength(1);
  return String(posted[0]!.body);
}

describe(
  "delivering the agent's work (real CLI, real Postgres, GitHub stand-in)",
  { timeout: 180_000 },
  () => {
    let issue = 0;
    let firstSha = "";
    let pullNumber = 0;

    it("1. a turn that writes a file: the branch holds it, the default branch does not, one draft pull request, linked in the answer", async () => {
      issue = newIssue("Parser drops the last line");
      const mainBefore = await stack.gh.sha(REPO, "main");
      stack.api.script(
        ...agentWrites(
          { "src/parser.js": "export const parse = (s) => s.split(/\\r?\\n/);\n" },
          "Fixed: the parser keeps the last line now.",
        ),
      );
      const task = await stack.finishedTask(
        await stack.comment(issue, "@tether fix the off-by-one in parser.js"),
      );
      expect(task).toMatchObject({
        status: "succeeded",
        publish_result: "published",
        commits_pushed: 1,
      });
      const branch = `tether/${issue}-tether`;
      expect(fileAt(`refs/heads/${branch}`, "src/parser.js")).toContain("\\r?\\n");
      expect(await stack.gh.sha(REPO, "main")).toBe(mainBefore);
      expect(fileAt("refs/heads/main", "src/parser.js")).toBeUndefined();

      firstSha = (await stack.gh.sha(REPO, branch))!;
      expect(parents(firstSha)).toEqual([mainBefore]);
      expect(commitOf(firstSha, "%an <%ae>")).toMatch(
        /^tether\[bot\] <\d+\+tether\[bot\]@users\.noreply\./,
      );
      expect(commitOf(firstSha, "%B")).toMatch(
        /Co-authored-by: alice <\d+\+alice@users\.noreply\./,
      );

      // Pushed once, with a token minted for this repository and contents: write.
      const pushes = stack.gh.pushesTo(REPO, branch);
      expect(pushes).toHaveLength(1);
      expect(pushes[0]).toMatchObject({ before: null, after: firstSha, repositories: [REPO] });
      expect(pushes[0]!.permissions).toEqual({ contents: "write", metadata: "read" });

      const pulls = stack.gh.pulls(REPO).filter((p) => (p.head as { ref: string }).ref === branch);
      expect(pulls).toHaveLength(1);
      const pull = pulls[0]!;
      pullNumber = pull.number as number;
      expect(pull).toMatchObject({
        draft: true,
        title: "Parser drops the last line",
        state: "open",
      });
      expect(String(pull.body)).toContain(`Closes #${issue}`);
      expect(String(pull.body)).toContain("Fixed: the parser keeps the last line now.");
      expect(task.pull_opened).toBe(pullNumber);

      const answer = answerOf(issue, task);
      expect(answer).toContain("Fixed: the parser keeps the last line now.");
      expect(answer).toContain(`pull request [#${pullNumber}](${String(pull.html_url)})`);
      expect(answer).toMatch(/\| `src\/parser\.js` \(new\) \| \+1 \| −0 \|/);
    });

    it("2. a follow-up turn adds a commit whose parent is the first; no second pull request", async () => {
      stack.api.script(
        ...agentWrites(
          { "test/parser.test.js": "import { parse } from '../src/parser.js';\n" },
          "Added a test.",
        ),
      );
      const task = await stack.finishedTask(await stack.comment(issue, "@tether now add a test"));
      expect(task).toMatchObject({
        status: "succeeded",
        publish_result: "published",
        resume_reason: "resumed",
      });
      const sha = (await stack.gh.sha(REPO, `tether/${issue}-tether`))!;
      expect(sha).not.toBe(firstSha);
      expect(parents(sha)).toEqual([firstSha]);
      expect(fileAt(sha, "src/parser.js")).toContain("\\r?\\n");
      expect(
        stack.gh
          .pulls(REPO)
          .filter((p) => (p.head as { ref: string }).ref === `tether/${issue}-tether`),
      ).toHaveLength(1);
      expect(task.pull_opened).toBeNull();
      expect(answerOf(issue, task)).toContain(`Pull request [#${pullNumber}]`);
    });
  },
);
