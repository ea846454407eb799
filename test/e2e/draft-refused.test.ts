/**
 * Issue 28, items 7 and 8, end to end: a private repository on a Free plan, where GitHub has no
 * draft pull requests. The built app, real Postgres, the real Claude CLI writing a file, and the
 * GitHub stand-in answering a draft as GitHub does (422). The pull request is opened ready, the
 * answer says so once, and the next pull request on that repository is opened ready without the
 * failing request. Every token names the repository by id.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, REPO, type Stack } from "../helpers/e2e-stack.js";
import { replies } from "../helpers/fake-anthropic.js";
import type { RecordedRequest } from "../helpers/fake-github.js";

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  // No publish settings: publish.draft is true by default.
  stack = await startStack({
    pool: db.pool,
    databaseUrl: db.url,
    config: "agents:\n  tether:\n    model: claude-sonnet-4-5\n",
    beforeApp: (gh) => gh.setVisibility(REPO, { private: true, plan: "free" }),
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const READY = "ready for review, not as a draft";

/** One turn on a new issue whose agent writes `file`; its task, answer and POST /pulls requests. */
async function turnThatWrites(title: string, file: string) {
  const issue = stack.gh.addIssue({ repo: REPO, title, body: "", user: "alice" }).number as number;
  const from = stack.gh.requests.length;
  stack.api.script(
    replies.toolUse("Write", { file_path: `/workspace/${file}`, content: "x\n" }),
    replies.text("Done."),
  );
  const task = await stack.finishedTask(await stack.comment(issue, `@tether add ${file}`), 150_000);
  const seen = stack.gh.requests.slice(from);
  const posts = seen.filter((r) => r.route === "POST /repos/{owner}/{repo}/pulls");
  const answers = stack.taskComments(issue, task.id as number);
  expect(answers).toHaveLength(1);
  return { issue, task, posts, seen, answer: String(answers[0]!.body) };
}

const draftOf = (r: RecordedRequest) => (r.body as { draft?: boolean }).draft;

describe(
  "a private repository on a Free plan (GitHub stand-in, built app)",
  { timeout: 300_000 },
  () => {
    it("the first pull request: refused as a draft, opened ready, said once, remembered", async () => {
      const t = await turnThatWrites("Add a", "a.txt");
      expect(t.task).toMatchObject({ status: "succeeded", publish_result: "published" });
      expect(t.posts.map((r) => [draftOf(r), r.status])).toEqual([
        [true, 422],
        [false, 201],
      ]);
      const pulls = stack.gh
        .pulls(REPO)
        .filter((p) => (p.head as { ref: string }).ref === `tether/${t.issue}-tether`);
      expect(pulls).toHaveLength(1);
      expect(pulls[0]!.draft).toBe(false);
      expect(t.answer.split(READY)).toHaveLength(2);
      expect(t.answer).not.toContain("something went wrong");
      const { rows } = await db.pool.query(
        "SELECT repo FROM repo_facts WHERE drafts_refused_at IS NOT NULL",
      );
      expect(rows).toEqual([{ repo: REPO }]);

      // Every scoped token of the turn (intake's is the installation's own) named the repository
      // by id, never by name.
      const repoId = stack.gh.repoJson(REPO).id;
      const exchanges = t.seen.filter(
        (r) => r.route === "POST /app/installations/{installation_id}/access_tokens",
      );
      const scoped = exchanges.filter((r) => (r.body as { permissions?: unknown })?.permissions);
      expect(scoped.length).toBeGreaterThan(0);
      for (const r of scoped) expect(r.body).toMatchObject({ repository_ids: [repoId] });
      for (const r of exchanges) expect(r.body ?? {}).not.toHaveProperty("repositories");
    });

    it("the next pull request on that repository: opened ready at once", async () => {
      const t = await turnThatWrites("Add b", "b.txt");
      expect(t.task).toMatchObject({ status: "succeeded", publish_result: "published" });
      expect(t.posts.map((r) => [draftOf(r), r.status])).toEqual([[false, 201]]);
      expect(t.answer.split(READY)).toHaveLength(2);
    });
  },
);
