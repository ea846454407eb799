import { describe, expect, it } from "vitest";
import { readDelivery } from "../../src/sql/deliveries.js";
import { readEpoch } from "../../src/sql/history.js";
import { intakeFile } from "../helpers/intake-file.js";
import {
  commentCreated,
  commentDeleted,
  commentEdited,
  INSTALLATION_ID,
  issueEdited,
  issueOpened,
  REPO_KEY,
} from "../helpers/intake-payloads.js";
import { APP_ID } from "../helpers/probot.js";
import { github } from "../helpers/intake-github.js";
import { readTask, repoIdOf, type Row, seedTask } from "../helpers/seed.js";

const t = await intakeFile({ issue: 500, commentId: 50_000 });
const { db } = t;

const T0 = new Date("2030-01-01T10:00:00Z");
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const epoch = (agent = "tether") =>
  readEpoch(db.pool, { repoId: repoIdOf(REPO_KEY), repo: REPO_KEY, issueNumber: t.issue, agent });

/** A queued task fed by comment `id` (as intake would have made it). */
async function queuedTaskFor(id: number, body: string, extra: Row = {}): Promise<Row> {
  const task = await seedTask(db.pool, {
    repo: REPO_KEY,
    issue_number: t.issue,
    trigger_comment_id: id,
    trigger_body: body,
    ...extra,
  });
  await feed(task.id, id, body, at(0));
  return task;
}

async function feed(taskId: unknown, id: number, body: string, createdAt: Date): Promise<void> {
  await db.pool.query(
    `INSERT INTO task_comments (source, agent, task_id, comment_id, author, url, body, created_at)
     VALUES ($1, 'tether', $2, $3, 'Codertocat', $4, $5, $6)`,
    [`comment:${id}`, taskId, id, `https://github.com/x#issuecomment-${id}`, body, createdAt],
  );
}

/** A finished turn of `agent` that ran in a session. */
const finishedTurn = (
  agent: string,
  startedAt: Date,
  decision: "fresh" | "resume",
  extra: Row = {},
) =>
  seedTask(db.pool, {
    repo: REPO_KEY,
    issue_number: t.issue,
    agent,
    status: "succeeded",
    session_id: `sess-${agent}-${t.issue}`,
    started_at: startedAt,
    resume_decision: decision,
    ...extra,
  });

/**
 * An edit of a comment that already addressed @tether: these tests are about what such edits
 * change (intake-edit-mentions.test.ts is about edits that add a mention, which start turns).
 */
const edit = (id: number, body: string, createdAt = at(-10)) =>
  t.app.deliver(
    "issue_comment",
    commentEdited({
      commentId: id,
      issueNumber: t.issue,
      body,
      previousBody: "@tether (the text before the edit)",
      createdAt: createdAt.toISOString(),
      updatedAt: new Date().toISOString(),
    }),
  );
const remove = (id: number, createdAt = at(-10)) =>
  t.app.deliver(
    "issue_comment",
    commentDeleted({
      commentId: id,
      issueNumber: t.issue,
      body: "gone",
      createdAt: createdAt.toISOString(),
    }),
  );

/**
 * The editor (here the comment's author) may ask: an edit of a request is judged like its author
 * (intake-edit-access.test.ts is about editors who may not).
 */
const editorMayAsk = () =>
  github().token(INSTALLATION_ID).noConfig().permission("Codertocat", "write");

describe("editing or deleting a queued task's comment", () => {
  it("an edit of the trigger updates the task and its comment", async () => {
    const task = await queuedTaskFor(t.commentId, "@tether fix A");
    editorMayAsk();
    await edit(t.commentId, "@tether fix B instead");
    expect(await readTask(db.pool, task.id)).toMatchObject({
      status: "queued",
      trigger_body: "@tether fix B instead",
    });
    const { rows } = await db.pool.query("SELECT body FROM task_comments WHERE task_id = $1", [
      task.id,
    ]);
    expect(rows).toEqual([{ body: "@tether fix B instead" }]);
    expect(await epoch()).toBe(0);
  });

  it("an edit of a coalesced comment updates that comment only", async () => {
    const task = await queuedTaskFor(t.commentId, "@tether first");
    await feed(task.id, t.commentId + 1000, "@tether second", at(1));
    editorMayAsk();
    await edit(t.commentId + 1000, "@tether second, edited");
    expect((await readTask(db.pool, task.id)).trigger_body).toBe("@tether first");
    const { rows } = await db.pool.query(
      "SELECT body FROM task_comments WHERE task_id = $1 ORDER BY created_at",
      [task.id],
    );
    expect(rows.map((r) => r.body)).toEqual(["@tether first", "@tether second, edited"]);
  });

  it("deleting the only comment cancels the task", async () => {
    const task = await queuedTaskFor(t.commentId, "@tether do it");
    await remove(t.commentId);
    expect(await readTask(db.pool, task.id)).toMatchObject({
      status: "cancelled",
      outcome: "cancelled",
      failure_reason: "its comment was deleted before it ran",
    });
  });

  it("deleting the trigger of a task with more comments hands the trigger to the next one", async () => {
    const task = await queuedTaskFor(t.commentId, "@tether first");
    await feed(task.id, t.commentId + 1000, "@tether second", at(1));
    await remove(t.commentId);
    expect(await readTask(db.pool, task.id)).toMatchObject({
      status: "queued",
      trigger_comment_id: t.commentId + 1000,
      trigger_body: "@tether second",
    });
  });

  it("leaves a task the runner already took alone, and bumps its key's epoch instead", async () => {
    const task = await queuedTaskFor(t.commentId, "@tether fix A", {
      status: "running",
      started_at: at(1),
    });
    editorMayAsk();
    await edit(t.commentId, "@tether fix B");
    expect((await readTask(db.pool, task.id)).trigger_body).toBe("@tether fix A");
    expect(await epoch()).toBe(1);
  });
});

describe("history epochs (guard history_edited)", () => {
  it("an edited comment that fed a turn bumps that key, not the issue's other keys", async () => {
    const turn = await finishedTurn("tether", at(5), "resume");
    await finishedTurn("reviewer", at(-30), "fresh");
    await feed(turn.id, t.commentId, "@tether go", at(4));
    editorMayAsk();
    await edit(t.commentId, "@tether go (edited)", at(4));
    expect(await epoch("tether")).toBe(1);
    expect(await epoch("reviewer")).toBe(0);
  });

  it("an edited comment older than a cold turn is in that turn's history", async () => {
    await finishedTurn("tether", at(5), "fresh");
    await edit(t.commentId, "typo fixed", at(1));
    expect(await epoch()).toBe(1);
  });

  it("a comment written after the session's cold turn, which fed no turn, is not in its history", async () => {
    await finishedTurn("tether", at(5), "fresh");
    await finishedTurn("tether", at(20), "resume");
    const id = `unrelated-${t.issue}`;
    await t.app.deliver(
      "issue_comment",
      commentEdited({
        commentId: t.commentId,
        issueNumber: t.issue,
        body: "unrelated",
        createdAt: at(10).toISOString(),
      }),
      id,
    );
    expect(await epoch()).toBe(0);
    expect(await readDelivery(db.pool, id)).toMatchObject({ status: "skipped" });
  });

  it("a deleted comment in the history bumps the key too, and each change bumps again", async () => {
    await finishedTurn("tether", at(5), "fresh");
    await edit(t.commentId, "v2", at(1));
    await remove(t.commentId, at(1));
    expect(await epoch()).toBe(2);
    // Each bump says what changed: what a rewind sends again, or leaves out.
    const { rows } = await db.pool.query(
      `SELECT epoch, source, deleted, body FROM history_edits
        WHERE repo_id = (SELECT repo_id FROM tasks WHERE repo = $1 LIMIT 1) AND issue_number = $2 AND agent = 'tether' ORDER BY epoch`,
      [REPO_KEY, t.issue],
    );
    expect(rows).toEqual([
      { epoch: 1, source: `comment:${t.commentId}`, deleted: false, body: "v2" },
      { epoch: 2, source: `comment:${t.commentId}`, deleted: true, body: null },
    ]);
  });

  it("an edited issue body bumps every key on the issue that has a session", async () => {
    await finishedTurn("tether", at(5), "resume");
    await finishedTurn("reviewer", at(6), "fresh");
    await seedTask(db.pool, {
      repo: REPO_KEY,
      issue_number: t.issue,
      agent: "helper",
      status: "queued",
    });
    await t.app.deliver(
      "issues",
      issueEdited({
        issueNumber: t.issue,
        body: "new description",
        updatedAt: new Date().toISOString(),
      }),
    );
    expect([await epoch("tether"), await epoch("reviewer"), await epoch("helper")]).toEqual([
      1, 1, 0,
    ]);
    const { rows } = await db.pool.query(
      `SELECT agent, source FROM history_edits WHERE repo_id = (SELECT repo_id FROM tasks WHERE repo = $1 LIMIT 1) AND issue_number = $2 ORDER BY agent`,
      [REPO_KEY, t.issue],
    );
    // The issue body: every turn read it, so no rewind goes past it.
    expect(rows).toEqual([
      { agent: "reviewer", source: null },
      { agent: "tether", source: null },
    ]);
  });

  it("an edited issue body updates a queued task the body itself asked for", async () => {
    const task = await seedTask(db.pool, {
      repo: REPO_KEY,
      issue_number: t.issue,
      trigger_comment_id: null,
      trigger_body: "@tether A",
    });
    await db.pool.query(
      `INSERT INTO task_comments (source, agent, task_id, comment_id, author, url, body) VALUES ($1, 'tether', $2, NULL, 'Codertocat', 'u', '@tether A')`,
      [`issue:${500_000 + t.issue}`, task.id],
    );
    editorMayAsk();
    await t.app.deliver(
      "issues",
      issueEdited({
        issueNumber: t.issue,
        body: "@tether B",
        previousBody: "@tether A",
        updatedAt: new Date().toISOString(),
      }),
    );
    expect((await readTask(db.pool, task.id)).trigger_body).toBe("@tether B");
  });
});

describe("which edits the webhook takes in", () => {
  const inboxRows = async () =>
    (
      await db.pool.query(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE payload->'issue'->>'number' = $1",
        [String(t.issue)],
      )
    ).rows[0].n;

  it("none on an issue without tasks", async () => {
    await edit(t.commentId, "whatever");
    await remove(t.commentId);
    await t.app.deliver("issues", issueEdited({ issueNumber: t.issue, body: "x" }));
    expect(await inboxRows()).toBe(0);
  });

  it("not Tether's own edits (its progress updates)", async () => {
    await finishedTurn("tether", at(5), "fresh");
    await t.app.deliver(
      "issue_comment",
      commentEdited({
        commentId: t.commentId,
        issueNumber: t.issue,
        body: "progress 50%",
        viaAppId: APP_ID,
        createdAt: at(1).toISOString(),
      }),
    );
    expect(await inboxRows()).toBe(0);
    expect(await epoch()).toBe(0);
  });

  it("not an issue edit that left the body alone (a title change)", async () => {
    await finishedTurn("tether", at(5), "fresh");
    const payload = issueEdited({ issueNumber: t.issue, body: "same" });
    payload.changes = { title: { from: "old title" } };
    await t.app.deliver("issues", payload);
    expect(await inboxRows()).toBe(0);
  });

  it("an edit that arrives while its comment's creation is still in the inbox waits for it, then updates the new task", async () => {
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToComment(t.commentId)
      .noConfig() // the edit's: its editor is judged too
      .permission("Codertocat", "write");
    await t.app.receive(
      "issue_comment",
      commentCreated({ commentId: t.commentId, issueNumber: t.issue, body: "@tether old text" }),
      `c-${t.issue}`,
    );
    await t.app.receive(
      "issue_comment",
      commentEdited({
        commentId: t.commentId,
        issueNumber: t.issue,
        body: "@tether new text",
        previousBody: "@tether old text",
        updatedAt: new Date().toISOString(),
      }),
      `e-${t.issue}`,
    );
    await t.app.settle();
    const { rows } = await db.pool.query("SELECT * FROM tasks WHERE issue_number = $1", [t.issue]);
    expect(rows).toHaveLength(1);
    expect(rows[0].trigger_body).toBe("@tether new text");
    expect(await readDelivery(db.pool, `e-${t.issue}`)).toMatchObject({
      status: "done",
      attempts: 1,
    });
  });

  it("an issue opened and edited at once: the edit waits for the opening", async () => {
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToIssue(t.issue)
      .noConfig() // the edit's: its editor is judged too
      .permission("Codertocat", "write");
    await t.app.receive("issues", issueOpened({ issueNumber: t.issue, body: "@tether old" }));
    await t.app.receive(
      "issues",
      issueEdited({
        issueNumber: t.issue,
        body: "@tether new",
        previousBody: "@tether old",
        updatedAt: new Date().toISOString(),
      }),
    );
    await t.app.settle();
    const { rows } = await db.pool.query("SELECT trigger_body FROM tasks WHERE issue_number = $1", [
      t.issue,
    ]);
    expect(rows).toEqual([{ trigger_body: "@tether new" }]);
  });
});
