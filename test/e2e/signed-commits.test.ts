/**
 * Issue 39 item 3, end to end: with `changes.signedCommits` (the default) the turn's commit is
 * made through GitHub's Git Data API, so GitHub signs it and marks it verified. The built app as
 * a process, real Postgres, the real Claude CLI in its sandbox changing files of every kind
 * (the fake Messages API scripts a Bash call), and the GitHub stand-in, whose Git Data routes
 * write real objects into its repository.
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIGNED_COMMIT_REQUEST_BUDGET } from "../../src/publish/signed-commit.js";
import { createTestDatabase } from "../helpers/db.js";
import { answerOf, newIssue } from "../helpers/e2e-thread.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import { replies } from "../helpers/fake-anthropic.js";
import { lastSeq, turnRequests } from "../helpers/turn-requests.js";

const config = (signedCommits?: boolean) => `
agents:
  tether:
    model: claude-sonnet-4-5
    allowedTools: ["Bash"]
${signedCommits === undefined ? "" : `changes:\n  signedCommits: ${signedCommits}\n`}`;

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    config: config(),
    files: {
      "README.md": "# widgets\n",
      "src/split.js": "export const split = (s) => s.split('\\n');\n",
      "OLD.md": "to be deleted\n",
      "run.sh": "echo hi\n",
    },
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const finished = (commentId: number) => stack.finishedTask(commentId, 150_000);

const bare = (...args: string[]) =>
  execFileSync("git", ["-C", stack.gh.barePath(REPO), ...args], { encoding: "utf8" }).trim();

/** The model runs one shell command, then answers `text`. */
function agentRuns(command: string, text: string) {
  stack.api.script(
    replies.toolUse("Bash", { command, description: "Change files" }),
    replies.text(text),
  );
}

/** Git Data requests a turn made, by route. */
const gitData = (from: number) =>
  turnRequests(stack.gh, from)
    .map((r) => r.route ?? "")
    .filter((r) => r.includes("/git/"))
    .map((r) =>
      r
        .replace("POST /repos/{owner}/{repo}/git/", "")
        .replace("PATCH /repos/{owner}/{repo}/git/", "PATCH "),
    );

const manyFiles = `for i in $(seq 1 ${SIGNED_COMMIT_REQUEST_BUDGET}); do echo "file $i" > "gen-$i.txt"; done; echo MANY-DONE`;

describe("signed commits (real CLI, real Postgres, GitHub stand-in)", { timeout: 300_000 }, () => {
  let issue = 0;
  let first = "";

  it("1. a turn that adds, changes, deletes files, makes one executable and writes a binary: one commit made through the API, verified, with the trailer; no git push", async () => {
    issue = newIssue(stack, "Tidy the widgets");
    const main = bare("rev-parse", "refs/heads/main");
    agentRuns(
      "cd /workspace && printf '# widgets, tidied\\n' > README.md && rm OLD.md && chmod +x run.sh && printf '\\000\\001\\377\\376bin' > logo.bin && printf 'export const join = (a) => a.join(\"\\\\n\");\\n' > src/join.js && echo FILES-DONE",
      "Tidied the widgets.",
    );
    const from = lastSeq(stack.gh);
    const task = await finished(await stack.comment(issue, "@tether tidy up"));
    expect(task).toMatchObject({
      status: "succeeded",
      publish_result: "published",
      commits_pushed: 1,
    });
    // README, logo.bin and src/join.js are new contents: three blobs. run.sh's content GitHub
    // has (only its mode changed) and OLD.md's deletion need none.
    expect(gitData(from)).toEqual(["blobs", "blobs", "blobs", "trees", "commits", "refs"]);
    const branch = `tether/${issue}-tether`;
    expect(stack.gh.pushesTo(REPO, branch).map((p) => p.via)).toEqual(["api"]);
    first = bare("rev-parse", `refs/heads/${branch}`);
    expect(stack.gh.isVerified(REPO, first)).toBe(true);
    expect(bare("rev-list", "--parents", "-n1", first).split(" ").slice(1)).toEqual([main]);
    expect(bare("show", "-s", "--format=%an", first)).toBe("tether[bot]");
    expect(bare("show", "-s", "--format=%B", first)).toMatch(
      /Co-authored-by: alice <\d+\+alice@users\.noreply\./,
    );
    const tree = bare("ls-tree", "-r", first);
    expect(tree).toMatch(/^100755 blob \w+\trun\.sh$/m);
    expect(tree).not.toContain("OLD.md");
    expect(tree).toMatch(/\tlogo\.bin$/m);
    expect(bare("show", `${first}:README.md`)).toBe("# widgets, tidied");
    // What GitHub answered the commit request with.
    const made = stack.gh.requests.find(
      (r) => r.route === "POST /repos/{owner}/{repo}/git/commits" && r.seq > from,
    );
    expect(made?.status).toBe(201);
    const answer = answerOf(stack, issue, task);
    expect(answer).toContain("through GitHub's API, signed by GitHub (Verified)");
    expect(answer).toContain(first.slice(0, 7));
  });

  it("2. the next turn's checkout stands on GitHub's commit; its change goes on top, through the API too", async () => {
    agentRuns(
      "cd /workspace && git rev-parse HEAD > /tmp/head && printf 'second\\n' >> README.md && echo \"HEAD=$(cat /tmp/head)\"",
      "Added a line.",
    );
    const m = stack.api.requests.length;
    const from = lastSeq(stack.gh);
    const task = await finished(await stack.comment(issue, "@tether add a line"));
    expect(task).toMatchObject({ status: "succeeded", publish_result: "published" });
    const seen = JSON.stringify(stack.api.requests.slice(m).map((r) => r.body));
    expect(seen).toContain(`HEAD=${first}`);
    expect(gitData(from)).toEqual(["blobs", "trees", "commits", "PATCH refs/{ref}"]);
    const second = bare("rev-parse", `refs/heads/tether/${issue}-tether`);
    expect(bare("rev-parse", `${second}^`)).toBe(first);
    expect(stack.gh.isVerified(REPO, second)).toBe(true);
  });

  it("3. a change too large for the request budget is pushed with git, and the answer says why", async () => {
    const n = newIssue(stack, "Generate many files");
    agentRuns(`cd /workspace && ${manyFiles}`, "Generated them.");
    const from = lastSeq(stack.gh);
    const task = await finished(await stack.comment(n, "@tether generate the files"));
    expect(task).toMatchObject({ status: "succeeded", publish_result: "published" });
    expect(gitData(from)).toEqual([]);
    expect(stack.gh.pushesTo(REPO, `tether/${n}-tether`).map((p) => p.via)).toEqual(["git"]);
    const answer = answerOf(stack, n, task);
    expect(answer).toContain("Pushed with git, unsigned");
    expect(answer).toContain(`more than the ${SIGNED_COMMIT_REQUEST_BUDGET}`);
  });

  it("4. the same on a branch that requires signed commits: refused, naming the limit", async () => {
    const n = newIssue(stack, "Generate many signed files");
    stack.gh.requireSignatures(REPO, `tether/${n}-tether`);
    agentRuns(`cd /workspace && ${manyFiles}`, "Generated them.");
    const task = await finished(await stack.comment(n, "@tether generate the files"));
    expect(task).toMatchObject({
      status: "succeeded",
      publish_result: "refused",
      publish_reason: "signatures-required",
    });
    expect(stack.gh.pushesTo(REPO, `tether/${n}-tether`)).toEqual([]);
    const answer = answerOf(stack, n, task);
    expect(answer).toMatch(/requires signed commits, and this change needs \d+ requests/);
    expect(answer).toContain(`more than the ${SIGNED_COMMIT_REQUEST_BUDGET} one publish may make`);
  });

  it("5. changes.signedCommits: false keeps the git push", async () => {
    await stack.gh.setConfig(REPO, config(false));
    try {
      const n = newIssue(stack, "Plain push");
      agentRuns("cd /workspace && printf 'plain\\n' > PLAIN.md", "Wrote it.");
      const from = lastSeq(stack.gh);
      const task = await finished(await stack.comment(n, "@tether write it"));
      expect(task).toMatchObject({ status: "succeeded", publish_result: "published" });
      expect(gitData(from)).toEqual([]);
      const branch = `tether/${n}-tether`;
      expect(stack.gh.pushesTo(REPO, branch).map((p) => p.via)).toEqual(["git"]);
      expect(stack.gh.isVerified(REPO, bare("rev-parse", `refs/heads/${branch}`))).toBe(false);
      expect(answerOf(stack, n, task)).toContain("pushed 1 commit to");
    } finally {
      await stack.gh.setConfig(REPO, config());
    }
  });
});
