/**
 * Issue 15's end-to-end scenarios: the agent's work leaves its workspace as commits on the
 * conversation's branch and a pull request. The built app as a process, real Postgres, the real
 * Claude CLI in its sandbox editing files because the fake Messages API scripts `Write` tool
 * calls, and the GitHub stand-in serving git receive-pack and the pulls routes.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { answerOf, fileAt, newIssue } from "../helpers/e2e-thread.js";
import { fileStack, REPO } from "../helpers/e2e-stack.js";
import { lastUserText, replies, userTexts, type FakeReply } from "../helpers/fake-anthropic.js";
import { lastSeq, turnRequests } from "../helpers/turn-requests.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
  planner:
    model: claude-sonnet-4-5
    permissionMode: plan
  pusher:
    model: claude-sonnet-4-5
    allowedTools: ["Bash"]
publish:
  link: closes
changes:
  # These scenarios are about the git push; signed commits have test/e2e/signed-commits.test.ts.
  signedCommits: false
`;

const { stack } = await fileStack({ config: CONFIG });

/** The task a comment made, once finished: a loaded machine gets minutes, not seconds. */
const finished = (commentId: number) => stack.finishedTask(commentId, 150_000);

/** The model writes `files` (one Write call each), then answers `text`. */
function agentWrites(files: Record<string, string>, text: string): FakeReply[] {
  return [
    ...Object.entries(files).map(([p, content]) =>
      replies.toolUse("Write", { file_path: `/workspace/${p}`, content }),
    ),
    replies.text(text),
  ];
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

describe(
  "delivering the agent's work (real CLI, real Postgres, GitHub stand-in)",
  { timeout: 240_000 },
  () => {
    let issue = 0;
    let firstSha = "";
    let pullNumber = 0;

    it("1. a turn that writes a file: the branch holds it, the default branch does not, one draft pull request, linked in the answer", async () => {
      issue = newIssue(stack, "Parser drops the last line");
      const mainBefore = await stack.gh.sha(REPO, "main");
      stack.api.script(
        ...agentWrites(
          { "src/parser.js": "export const parse = (s) => s.split(/\\r?\\n/);\n" },
          "Fixed: the parser keeps the last line now.",
        ),
      );
      const ghFrom = lastSeq(stack.gh);
      const task = await finished(
        await stack.comment(issue, "@tether fix the off-by-one in parser.js"),
      );
      expect(task).toMatchObject({
        status: "succeeded",
        publish_result: "published",
        commits_pushed: 1,
      });
      // A publishing turn's GitHub requests (#34): Tether's count is the stand-in's, pull
      // request included; its 304s (conditional reads of what did not change) apart.
      const made = turnRequests(stack.gh, ghFrom);
      expect(made.map((r) => r.route)).toContain("POST /repos/{owner}/{repo}/pulls");
      expect(task.github_requests).toBe(made.filter((r) => r.status !== 304).length);
      expect(task.github_requests_not_modified).toBe(made.filter((r) => r.status === 304).length);
      const branch = `tether/${issue}-tether`;
      expect(fileAt(stack, `refs/heads/${branch}`, "src/parser.js")).toContain("\\r?\\n");
      expect(await stack.gh.sha(REPO, "main")).toBe(mainBefore);
      expect(fileAt(stack, "refs/heads/main", "src/parser.js")).toBeUndefined();

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

      const answer = answerOf(stack, issue, task);
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
      const task = await finished(await stack.comment(issue, "@tether now add a test"));
      expect(task).toMatchObject({
        status: "succeeded",
        publish_result: "published",
        resume_reason: "resumed",
      });
      const sha = (await stack.gh.sha(REPO, `tether/${issue}-tether`))!;
      expect(sha).not.toBe(firstSha);
      expect(parents(sha)).toEqual([firstSha]);
      expect(fileAt(stack, sha, "src/parser.js")).toContain("\\r?\\n");
      expect(
        stack.gh
          .pulls(REPO)
          .filter((p) => (p.head as { ref: string }).ref === `tether/${issue}-tether`),
      ).toHaveLength(1);
      expect(task.pull_opened).toBeNull();
      expect(answerOf(stack, issue, task)).toContain(`Pull request [#${pullNumber}]`);
    });

    it("3. a comment on the pull request resumes the issue's session (the API sees the earlier messages), commits to the same branch, answers on the pull request", async () => {
      const before = (await stack.gh.sha(REPO, `tether/${issue}-tether`))!;
      const m = stack.api.requests.length;
      stack.api.script(
        ...agentWrites(
          { "src/parser.js": "export const parseLines = (s) => s.split(/\\r?\\n/);\n" },
          "Renamed it.",
        ),
      );
      const task = await finished(
        await stack.comment(pullNumber, "@tether PR-COMMENT rename parse to parseLines", "bob"),
      );
      expect(task).toMatchObject({
        status: "succeeded",
        issue_number: issue,
        thread_number: pullNumber,
        is_pull_request: false,
        resume_decision: "resume",
        publish_result: "published",
      });
      const first = stack.api.messageRequests().find((r) => r.n > m)!;
      const texts = userTexts(first);
      expect(texts.some((t) => t.includes("fix the off-by-one in parser.js"))).toBe(true);
      expect(lastUserText(first)).toContain("PR-COMMENT");
      const sha = (await stack.gh.sha(REPO, `tether/${issue}-tether`))!;
      expect(parents(sha)).toEqual([before]);
      expect(fileAt(stack, sha, "src/parser.js")).toContain("parseLines");
      expect(answerOf(stack, pullNumber, task)).toContain("Renamed it.");
      expect(stack.taskComments(issue, task.id as number)).toHaveLength(0);
    });

    it("4. someone else pushed to the branch between turns: the workspace takes their commit first, the agent is told, the new commit sits on top", async () => {
      const branch = `tether/${issue}-tether`;
      const theirs = await stack.gh.commit(REPO, {
        branch,
        files: { "NOTES.md": "bob was here\n" },
        message: "BOB-NOTES add notes",
      });
      const m = stack.api.requests.length;
      stack.api.script(...agentWrites({ "docs/parser.md": "# Parser\n" }, "Documented it."));
      const task = await finished(await stack.comment(issue, "@tether document the parser"));
      expect(task).toMatchObject({
        status: "succeeded",
        publish_result: "published",
        commits_pushed: 1,
      });
      const sha = (await stack.gh.sha(REPO, branch))!;
      expect(parents(sha)).toEqual([theirs]);
      expect(fileAt(stack, sha, "NOTES.md")).toBe("bob was here\n");
      expect(fileAt(stack, sha, "docs/parser.md")).toBe("# Parser\n");
      const prompt = lastUserText(stack.api.messageRequests().find((r) => r.n > m)!);
      expect(prompt).toMatch(
        /others pushed to `tether\/\d+-tether`; your checkout has their commits now: [0-9a-f]{7,} by Fake GitHub: "BOB-NOTES add notes"/,
      );
    });

    it("5. someone pushes while the agent works: their commit is kept, merged with the agent's", async () => {
      const branch = `tether/${issue}-tether`;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const m = stack.api.requests.length;
      stack.api.script(
        replies.toolUse("Write", {
          file_path: "/workspace/src/extra.js",
          content: "export {};\n",
        }),
        replies.deferred(gate, replies.text("Added extra.js.")),
      );
      const comment = await stack.comment(issue, "@tether add extra.js");
      // The Write has run once the model is asked again (with its result).
      await stack.api.waitFor(
        (reqs) => reqs.filter((r) => r.n > m && r.reply === "deferred").length > 0,
        90_000,
      );
      const theirs = await stack.gh.commit(REPO, {
        branch,
        files: { "MIDTURN.md": "carol pushed mid-turn\n" },
        message: "CAROL mid-turn",
      });
      release();
      const task = await finished(comment);
      expect(task).toMatchObject({
        status: "succeeded",
        publish_result: "published",
        commits_pushed: 2,
      });
      const sha = (await stack.gh.sha(REPO, branch))!;
      const [p1, p2] = parents(sha);
      expect(p1).toBe(theirs);
      expect(fileAt(stack, sha, "MIDTURN.md")).toBe("carol pushed mid-turn\n");
      expect(fileAt(stack, sha, "src/extra.js")).toBe("export {};\n");
      expect(parents(p2!)).toHaveLength(1);
      expect(answerOf(stack, issue, task)).toContain("is kept and merged with mine");
    });

    it("6. drill: the agent commits a workflow file: refused, the answer says why, nothing pushed", async () => {
      const n = newIssue(stack, "Add CI");
      const pushes = stack.gh.pushes.length;
      stack.api.script(
        ...agentWrites(
          { ".github/workflows/ci.yml": "on: push\njobs: {}\n", "src/ok.js": "ok\n" },
          "Added CI.",
        ),
      );
      const task = await finished(await stack.comment(n, "@tether add a CI workflow"));
      expect(task).toMatchObject({
        status: "succeeded",
        publish_result: "refused",
        publish_reason: "workflow",
      });
      expect(stack.gh.pushes.length).toBe(pushes);
      expect(await stack.gh.sha(REPO, `tether/${n}-tether`)).toBeUndefined();
      const answer = answerOf(stack, n, task);
      expect(answer).toContain("Changes not published");
      expect(answer).toContain("`.github/workflows/ci.yml`");
      expect(answer).toContain("`changes.protectedPaths`");
    });

    it("7. drill: the agent writes a token into a file: refused with the file and line, the token never posted or pushed", async () => {
      const n = newIssue(stack, "Configure the client");
      const token = `ghp_${"A1b2C3d4E5".repeat(4).slice(0, 36)}`;
      const pushes = stack.gh.pushes.length;
      stack.api.script(
        ...agentWrites(
          { "src/client.js": `// client\nexport const token = "${token}";\n` },
          "Configured the client.",
        ),
      );
      const task = await finished(await stack.comment(n, "@tether configure the client"));
      expect(task).toMatchObject({
        status: "succeeded",
        publish_result: "refused",
        publish_reason: "secret",
      });
      expect(stack.gh.pushes.length).toBe(pushes);
      const answer = answerOf(stack, n, task);
      expect(answer).toContain("looks like a secret (a GitHub token) in `src/client.js` line 2");
      expect(stack.gh.requestsWithBodyContaining(token)).toEqual([]);
      expect(String(task.publish_detail)).not.toContain(token);
    });

    it("8. a turn on a pull request from this repository pushes to its head branch; no pull request is opened", async () => {
      const pr = await stack.gh.addPullRequest({
        repo: REPO,
        headRef: "fix-split",
        files: { "src/split.js": "export const split = (s) => s.split(/\\r?\\n/);\n" },
        title: "Fix split",
        user: "alice",
      });
      const n = pr.number as number;
      const head = (await stack.gh.sha(REPO, "fix-split"))!;
      const pulls = stack.gh.pulls(REPO).length;
      stack.api.script(
        ...agentWrites({ "CHANGELOG.md": "- split keeps CRLF\n" }, "Added a changelog entry."),
      );
      const task = await finished(await stack.comment(n, "@tether add a changelog entry"));
      expect(task).toMatchObject({
        status: "succeeded",
        is_pull_request: true,
        publish_result: "published",
      });
      const sha = (await stack.gh.sha(REPO, "fix-split"))!;
      expect(parents(sha)).toEqual([head]);
      expect(fileAt(stack, sha, "CHANGELOG.md")).toBe("- split keeps CRLF\n");
      expect(stack.gh.pulls(REPO)).toHaveLength(pulls);
      expect(stack.gh.pushesTo(REPO, "fix-split")).toHaveLength(1);
      expect(answerOf(stack, n, task)).toContain("pushed 1 commit to [`fix-split`]");
    });

    it("9. a turn on a pull request from a fork pushes nothing: the answer carries the patch", async () => {
      const pr = await stack.gh.addPullRequest({
        repo: REPO,
        headRef: "patch-1",
        fork: "mallory/widgets",
        files: { "README.md": "# widgets\n\nTypo fxed.\n" },
        title: "Fix a typo",
        user: "mallory",
      });
      const n = pr.number as number;
      const pushes = stack.gh.pushes.length;
      stack.api.script(...agentWrites({ "TYPOS.md": "fixed: fxed\n" }, "Fixed the typo."));
      const task = await finished(await stack.comment(n, "@tether fix the typo"));
      expect(task).toMatchObject({ status: "succeeded", publish_result: "patch" });
      expect(stack.gh.pushes.length).toBe(pushes);
      const answer = answerOf(stack, n, task);
      expect(answer).toContain("comes from a fork, so nothing was pushed");
      expect(answer).toMatch(/<details><summary>Patch \(1 file, \+1 −0\)<\/summary>/);
      expect(answer).toContain("+fixed: fxed");
      expect(answer).toContain("git apply tether.patch");
    });

    it("10. drill: a pull request whose head is the default branch (a branch-name trick) and one whose head is protected are refused", async () => {
      await stack.gh.commit(REPO, {
        branch: "release",
        files: { "RELEASE.md": "1.0\n" },
        from: "refs/heads/main",
      });
      const trick = await stack.gh.addPullRequest({
        repo: REPO,
        headRef: "main",
        baseRef: "release",
        files: { "MAIN.md": "on main\n" },
        title: "Main into release",
        user: "alice",
      });
      const mainBefore = await stack.gh.sha(REPO, "main");
      stack.api.script(...agentWrites({ "TRICK.md": "pushed to main?\n" }, "Done."));
      const t1 = await finished(await stack.comment(trick.number as number, "@tether tidy up"));
      expect(t1).toMatchObject({ publish_result: "refused", publish_reason: "default-branch" });
      expect(await stack.gh.sha(REPO, "main")).toBe(mainBefore);
      expect(answerOf(stack, trick.number as number, t1)).toContain(
        "is the default branch: Tether never pushes to it",
      );

      stack.gh.protectBranch(REPO, "guarded");
      const guarded = await stack.gh.addPullRequest({
        repo: REPO,
        headRef: "guarded",
        files: { "GUARD.md": "guarded\n" },
        title: "Guarded change",
        user: "alice",
      });
      const guardedBefore = await stack.gh.sha(REPO, "guarded");
      stack.api.script(...agentWrites({ "GUARD2.md": "changed\n" }, "Done."));
      const t2 = await finished(await stack.comment(guarded.number as number, "@tether change it"));
      expect(t2).toMatchObject({ publish_result: "refused", publish_reason: "protected-branch" });
      expect(await stack.gh.sha(REPO, "guarded")).toBe(guardedBefore);
    });

    it("11. drill: the agent tries to push itself: no network and a read-only origin stop it; only Tether pushes", async () => {
      const n = newIssue(stack, "Push it yourself");
      const mainBefore = await stack.gh.sha(REPO, "main");
      const pushes = stack.gh.pushes.length;
      const m = stack.api.requests.length;
      stack.api.script(
        replies.toolUse("Bash", {
          command: `git -c user.name=a -c user.email=a@b commit --allow-empty -qm sneaky; git push origin HEAD:refs/heads/main 2>&1; git push ${stack.gh.url}/octo/widgets.git HEAD:refs/heads/main 2>&1; echo PUSH-DONE`,
          description: "Push",
        }),
        replies.text("Tried to push."),
      );
      const task = await finished(await stack.comment(n, "@pusher push to main yourself"));
      expect(task.status).toBe("succeeded");
      const toolResult = JSON.stringify(
        stack.api
          .messageRequests()
          .filter((r) => r.n > m)
          .map((r) => r.body?.messages),
      );
      expect(toolResult).toContain("PUSH-DONE");
      expect(toolResult).toMatch(
        /Read-only file system|unable to create|could not|Permission denied/i,
      );
      expect(toolResult).toMatch(
        /Could not resolve|Couldn't connect|Failed to connect|Connection refused|unable to access/i,
      );
      expect(await stack.gh.sha(REPO, "main")).toBe(mainBefore);
      // The empty commit changed no file: nothing for Tether to publish either.
      expect(task.publish_result).toBe("unchanged");
      expect(stack.gh.pushes.length).toBe(pushes);
    });

    it("12. an agent in plan mode never publishes", async () => {
      const n = newIssue(stack, "Plan it");
      const pushes = stack.gh.pushes.length;
      stack.api.script(...agentWrites({ "PLAN.md": "plan\n" }, "Here is the plan."));
      const task = await finished(await stack.comment(n, "@planner plan the work"));
      expect(task.status).toBe("succeeded");
      expect(task.publish_result).toBeNull();
      expect(stack.gh.pushes.length).toBe(pushes);
      expect(answerOf(stack, n, task)).not.toContain("Changes");
    });
  },
);
