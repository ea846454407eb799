/**
 * An edit that addresses an agent the comment did not address before (a mistyped mention,
 * fixed; a mention added afterwards) is a request, taken like a new comment: same access
 * checks, same 👀, idempotent per (comment, agent). An edit of a comment that already addressed
 * the agent keeps changing what exists (queued task, history epoch) and starts nothing.
 */
import { describe, expect, it } from "vitest";
import { readDelivery } from "../../src/sql/deliveries.js";
import { readEpoch } from "../../src/sql/history.js";
import { intakeFile } from "../helpers/intake-file.js";
import {
  commentCreated,
  commentEdited,
  INSTALLATION_ID,
  issueEdited,
  REPO_KEY,
} from "../helpers/intake-payloads.js";
import { github } from "../helpers/intake-github.js";
import { readTask, readTasks, repoIdOf, seedTask } from "../helpers/seed.js";

const t = await intakeFile({ issue: 900, commentId: 990_000 });
const { db } = t;

const T0 = new Date("2030-01-01T10:00:00Z");
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
let edits = 0;

/** An edit of comment `commentId` from `before` to `after` (each edit its own updated_at). */
const edit = (before: string, after: string, o: { login?: string; id?: string } = {}) =>
  t.app.deliver(
    "issue_comment",
    commentEdited({
      commentId: t.commentId,
      issueNumber: t.issue,
      body: after,
      previousBody: before,
      createdAt: at(0).toISOString(),
      updatedAt: new Date(T0.getTime() + ++edits * 1000).toISOString(),
      ...(o.login ? { author: { login: o.login } } : {}),
    }),
    o.id,
  );

const tasksOnIssue = () => readTasks(db.pool, "issue_number = $1", [t.issue]);

describe("an edit that adds a mention", () => {
  it("starts a turn on an issue that had none: task queued with the edited text, 👀 on the comment", async () => {
    // The comment as first written mentioned no one: the webhook never took it.
    await t.app.deliver(
      "issue_comment",
      commentCreated({
        commentId: t.commentId,
        issueNumber: t.issue,
        body: "tether fix the build please",
      }),
    );
    expect(await tasksOnIssue()).toEqual([]);

    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToComment(t.commentId);
    await edit("tether fix the build please", "@tether fix the build please");
    const tasks = await tasksOnIssue();
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      agent: "tether",
      status: "queued",
      trigger_comment_id: t.commentId,
      trigger_body: "@tether fix the build please",
    });
  });

  it("a mistyped mention, fixed: the first delivery addressed no agent, the edit does", async () => {
    github().token(INSTALLATION_ID).noConfig();
    const created = `typo-${t.issue}`;
    await t.app.deliver(
      "issue_comment",
      commentCreated({
        commentId: t.commentId,
        issueNumber: t.issue,
        body: "@tetehr fix the build",
      }),
      created,
    );
    expect(await readDelivery(db.pool, created)).toMatchObject({
      status: "skipped",
      outcome: "addresses no agent",
    });

    github().noConfig().permission("Codertocat", "write").reactToComment(t.commentId);
    await edit("@tetehr fix the build", "@tether fix the build");
    expect((await tasksOnIssue()).map((t) => t.trigger_body)).toEqual(["@tether fix the build"]);
  });

  it("is idempotent per (comment, agent): the edit redelivered, or the mention taken out and put back, queue nothing new", async () => {
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToComment(t.commentId);
    const payload = commentEdited({
      commentId: t.commentId,
      issueNumber: t.issue,
      body: "@tether fix it",
      previousBody: "fix it",
      createdAt: at(0).toISOString(),
      updatedAt: at(1).toISOString(),
    });
    await t.app.deliver("issue_comment", payload, `first-${t.issue}`);
    // GitHub's "Redeliver": the same delivery id, then the same edit under another id.
    await t.app.deliver("issue_comment", payload, `first-${t.issue}`);
    await t.app.deliver("issue_comment", payload, `again-${t.issue}`);
    expect(await readDelivery(db.pool, `again-${t.issue}`)).toBeUndefined();

    // The mention taken out: the task stays, its text updated (its editor may ask).
    github().noConfig().permission("Codertocat", "write");
    await edit("@tether fix it", "fix it");
    github().noConfig().permission("Codertocat", "write").reactToComment(t.commentId);
    await edit("fix it", "@tether fix it, and the docs");
    const tasks = await tasksOnIssue();
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      status: "queued",
      trigger_body: "@tether fix it, and the docs",
    });
  });

  it("takes the same access checks: a reader's edit starts nothing and gets no 👀", async () => {
    github().token(INSTALLATION_ID).noConfig().permission("visitor", "read");
    const id = `reader-${t.issue}`;
    await edit("hello", "@tether hello", { login: "visitor", id });
    expect(await tasksOnIssue()).toEqual([]);
    expect(await readDelivery(db.pool, id)).toMatchObject({
      status: "skipped",
      outcome: "refused: visitor has read permission; access.minPermission is write",
    });
  });

  it("adding a second agent to a request: the first agent's queued task is updated, the second gets a turn", async () => {
    const first = await seedTask(db.pool, {
      repo: REPO_KEY,
      issue_number: t.issue,
      trigger_comment_id: t.commentId,
      trigger_body: "@tether fix it",
    });
    await db.pool.query(
      `INSERT INTO task_comments (source, agent, task_id, comment_id, author, url, body, created_at)
       VALUES ($1, 'tether', $2, $3, 'Codertocat', 'u', '@tether fix it', $4)`,
      [`comment:${t.commentId}`, first.id, t.commentId, at(0)],
    );
    github()
      .token(INSTALLATION_ID)
      .config("agents:\n  reviewer: {}\n")
      .permission("Codertocat", "write")
      .reactToComment(t.commentId);
    await edit("@tether fix it", "@tether @reviewer fix it");

    const tasks = await tasksOnIssue();
    expect(tasks.map((t) => [t.agent, t.status, t.trigger_body])).toEqual([
      ["tether", "queued", "@tether @reviewer fix it"],
      ["reviewer", "queued", "@tether @reviewer fix it"],
    ]);
  });

  it("commands in the added mention act as in a new comment: /cancel stops the agent's queued task", async () => {
    const queued = await seedTask(db.pool, { repo: REPO_KEY, issue_number: t.issue });
    const gh = github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToComment(t.commentId);
    const reply = gh.reply(t.issue);
    await edit("oops, wrong request", "@tether /cancel");
    expect(await readTask(db.pool, queued.id)).toMatchObject({ status: "cancelled" });
    expect(reply.bodies).toEqual(["`@tether`: cancelled the queued turn."]);
  });

  it("an issue description edited to add a mention starts a turn from the description", async () => {
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToIssue(t.issue);
    await t.app.deliver(
      "issues",
      issueEdited({
        issueNumber: t.issue,
        body: "The build fails.\n\n@tether can you look?",
        previousBody: "The build fails.",
        updatedAt: new Date().toISOString(),
      }),
    );
    const tasks = await tasksOnIssue();
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      trigger_comment_id: null,
      trigger_body: "The build fails.\n\n@tether can you look?",
    });
  });
});

describe("an edit of a comment that already addressed the agent", () => {
  it("starts nothing: with no task or session on the issue it is not even taken in", async () => {
    await edit("@tether fix teh build", "@tether fix the build");
    expect(await tasksOnIssue()).toEqual([]);
    const { rows } = await db.pool.query(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE payload->'issue'->>'number' = $1",
      [String(t.issue)],
    );
    expect(rows[0].n).toBe(0);
  });

  it("bumps the history epoch of the session that read it, and queues no new turn", async () => {
    const turn = await seedTask(db.pool, {
      repo: REPO_KEY,
      issue_number: t.issue,
      status: "succeeded",
      session_id: `s-${t.issue}`,
      started_at: at(5),
      resume_decision: "fresh",
    });
    await db.pool.query(
      `INSERT INTO task_comments (source, agent, task_id, comment_id, author, url, body, created_at)
       VALUES ($1, 'tether', $2, $3, 'Codertocat', 'u', '@tether fix teh build', $4)`,
      [`comment:${t.commentId}`, turn.id, t.commentId, at(0)],
    );
    github().token(INSTALLATION_ID).noConfig().permission("Codertocat", "write");
    await edit("@tether fix teh build", "@tether fix the build");
    expect(
      await readEpoch(db.pool, {
        repoId: repoIdOf(REPO_KEY),
        repo: REPO_KEY,
        issueNumber: t.issue,
        agent: "tether",
      }),
    ).toBe(1);
    expect((await tasksOnIssue()).map((t) => t.id)).toEqual([turn.id]);
  });
});
