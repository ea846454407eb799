import pg from "pg";
import { beforeEach, describe, expect, it } from "vitest";
import { countDeliveries, readDelivery } from "../../src/sql/deliveries.js";
import { createTestDatabase } from "../helpers/db.js";
import {
  commentCreated,
  INSTALLATION_ID,
  issueOpened,
  REPO_KEY,
} from "../helpers/intake-payloads.js";
import { createTestApp, type TestApp } from "../helpers/probot.js";
import { github, useNock } from "../helpers/intake-github.js";
import { readTasks, seedTask } from "../helpers/seed.js";

const db = await createTestDatabase();
useNock();

let app: TestApp;
let issue = 100;
beforeEach(async () => {
  app = await createTestApp(db);
  issue++;
});

const taskComments = async (taskId: unknown) =>
  (
    await db.pool.query(
      "SELECT source, agent, comment_id, author, body FROM task_comments WHERE task_id = $1 ORDER BY created_at",
      [taskId],
    )
  ).rows;

/** The GitHub calls a comment from a writer makes: token, config lookup, permission, 👀. */
function acceptedComment(commentId: number) {
  return github()
    .token(INSTALLATION_ID)
    .noConfig()
    .permission("Codertocat", "write")
    .reactToComment(commentId);
}

describe("issue_comment.created", () => {
  it("queues a task with the comment's id, author, URL and body, reacts 👀 and NOTIFYs tether_tasks", async () => {
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const notes: string[] = [];
    listener.on("notification", (n) => notes.push(`${n.channel}:${n.payload}`));
    await listener.query("LISTEN tether_tasks");
    try {
      acceptedComment(7001);
      const body = "@tether please fix the typo in the README";
      await app.deliver(
        "issue_comment",
        commentCreated({ commentId: 7001, issueNumber: issue, body }),
      );

      const tasks = await readTasks(db.pool, "issue_number = $1", [issue]);
      expect(tasks).toHaveLength(1);
      expect(tasks[0]).toMatchObject({
        repo: REPO_KEY,
        issue_number: issue,
        agent: "tether",
        status: "queued",
        installation_id: INSTALLATION_ID,
        trigger_comment_id: 7001,
        trigger_author: "Codertocat",
        trigger_url: `https://github.com/Codertocat/Hello-World/issues/${issue}#issuecomment-7001`,
        trigger_body: body,
        force_fresh: false,
        is_pull_request: false,
      });
      expect(await taskComments(tasks[0]!.id)).toEqual([
        { source: "comment:7001", agent: "tether", comment_id: 7001, author: "Codertocat", body },
      ]);
      await waitFor(() => notes.length > 0);
      expect(notes).toEqual([`tether_tasks:${tasks[0]!.id}`]);
    } finally {
      await listener.end();
    }
  });

  it("marks a pull request's task as such", async () => {
    acceptedComment(7002);
    await app.deliver(
      "issue_comment",
      commentCreated({
        commentId: 7002,
        issueNumber: issue,
        body: "@tether review this",
        pullRequest: true,
      }),
    );
    const [task] = await readTasks(db.pool, "issue_number = $1", [issue]);
    expect(task).toMatchObject({ is_pull_request: true, status: "queued" });
  });

  it("sets force_fresh for /fresh", async () => {
    acceptedComment(7003);
    await app.deliver(
      "issue_comment",
      commentCreated({
        commentId: 7003,
        issueNumber: issue,
        body: "@tether /fresh start over please",
      }),
    );
    const [task] = await readTasks(db.pool, "issue_number = $1", [issue]);
    expect(task).toMatchObject({
      force_fresh: true,
      trigger_body: "@tether /fresh start over please",
    });
  });

  it("takes no comment that mentions no one, or mentions only inside code or quotes: no inbox row, no GitHub call", async () => {
    for (const [i, body] of [
      "Thanks, looks good to me",
      "Run `@tether fix` to ask the bot",
      "```\n@tether do it\n```",
      "> @tether said something\n\nI agree",
    ].entries())
      await app.deliver(
        "issue_comment",
        commentCreated({ commentId: 7100 + i, issueNumber: issue, body }),
      );
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toEqual([]);
    expect(
      (
        await db.pool.query(
          "SELECT count(*)::int AS n FROM webhook_deliveries WHERE dedupe_key LIKE 'comment:71%'",
        )
      ).rows[0].n,
    ).toBe(0);
  });

  it("skips a comment that mentions someone who is not an agent, after reading the config", async () => {
    github().token(INSTALLATION_ID).noConfig();
    const id = `d-${issue}-alice`;
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId: 7004, issueNumber: issue, body: "@alice what do you think?" }),
      id,
    );
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toEqual([]);
    expect(await readDelivery(db.pool, id)).toMatchObject({
      status: "skipped",
      outcome: "addresses no agent",
    });
  });

  it("coalesces a comment into the key's queued task, keeping both comments, and force_fresh if either said /fresh", async () => {
    acceptedComment(7005);
    acceptedComment(7006);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId: 7005, issueNumber: issue, body: "@tether first" }),
    );
    app = await createTestApp(db); // a new Probot: the second token request is real, not cached
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId: 7006, issueNumber: issue, body: "@tether /fresh and second" }),
    );
    const tasks = await readTasks(db.pool, "issue_number = $1", [issue]);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      trigger_comment_id: 7005,
      force_fresh: true,
      status: "queued",
    });
    expect((await taskComments(tasks[0]!.id)).map((c) => c.comment_id)).toEqual([7005, 7006]);
  });

  it("makes a comment for a key whose task is running the next queued task", async () => {
    const running = await seedTask(db.pool, {
      repo: REPO_KEY,
      issue_number: issue,
      status: "running",
    });
    acceptedComment(7007);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId: 7007, issueNumber: issue, body: "@tether also this" }),
    );
    const tasks = await readTasks(db.pool, "issue_number = $1", [issue]);
    expect(tasks.map((t) => [t.id, t.status])).toEqual([
      [running.id, "running"],
      [expect.any(Number), "queued"],
    ]);
    expect(tasks[1]).toMatchObject({ trigger_comment_id: 7007 });
  });

  it("queues one task per addressed agent", async () => {
    github()
      .token(INSTALLATION_ID)
      .config("agents:\n  reviewer:\n    model: claude-opus-4-1\n")
      .permission("Codertocat", "admin")
      .reactToComment(7008);
    await app.deliver(
      "issue_comment",
      commentCreated({
        commentId: 7008,
        issueNumber: issue,
        body: "@tether @reviewer have a look",
      }),
    );
    const tasks = await readTasks(db.pool, "issue_number = $1", [issue]);
    expect(tasks.map((t) => t.agent).sort()).toEqual(["reviewer", "tether"]);
  });

  it("creates nothing new for a redelivered webhook: same delivery id, or the same comment under another id", async () => {
    acceptedComment(7009);
    const payload = commentCreated({ commentId: 7009, issueNumber: issue, body: "@tether once" });
    await app.deliver("issue_comment", payload, `same-${issue}`);
    await app.deliver("issue_comment", payload, `same-${issue}`);
    await app.deliver("issue_comment", payload, `other-${issue}`);
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toHaveLength(1);
    expect(await readDelivery(db.pool, `other-${issue}`)).toBeUndefined();
  });

  it("creates nothing new when the same comment reaches the queue twice (the task_comments key holds)", async () => {
    // Two processors racing on two deliveries of one comment would both get past the inbox
    // only if its dedupe key were gone; the queue's own key must still hold.
    acceptedComment(7010);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId: 7010, issueNumber: issue, body: "@tether x" }),
      `a-${issue}`,
    );
    await db.pool.query("UPDATE webhook_deliveries SET dedupe_key = NULL WHERE delivery_id = $1", [
      `a-${issue}`,
    ]);
    app = await createTestApp(db);
    acceptedComment(7010);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId: 7010, issueNumber: issue, body: "@tether x" }),
      `b-${issue}`,
    );
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toHaveLength(1);
    expect((await readDelivery(db.pool, `b-${issue}`))?.outcome).toMatch(
      /tether: duplicate task \d+/,
    );
  });

  it("answers GitHub before any GitHub work: the webhook only fills the inbox", async () => {
    // No interceptors: any GitHub call during receive() would fail the test (useNock).
    await app.receive(
      "issue_comment",
      commentCreated({ commentId: 7011, issueNumber: issue, body: "@tether later" }),
      `inbox-${issue}`,
    );
    expect(await readDelivery(db.pool, `inbox-${issue}`)).toMatchObject({
      status: "pending",
      attempts: 0,
    });
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toEqual([]);
    acceptedComment(7011);
    await app.processor.processPending();
    expect(await readDelivery(db.pool, `inbox-${issue}`)).toMatchObject({ status: "done" });
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toHaveLength(1);
  });
});

describe("issues.opened", () => {
  it("queues a task for an issue whose body mentions an agent, reacting on the issue", async () => {
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToIssue(issue);
    await app.deliver(
      "issues",
      issueOpened({ issueNumber: issue, body: "Crash on start.\n\n@tether can you find out why?" }),
    );
    const [task] = await readTasks(db.pool, "issue_number = $1", [issue]);
    expect(task).toMatchObject({
      agent: "tether",
      trigger_comment_id: null,
      trigger_author: "Codertocat",
      trigger_url: `https://github.com/Codertocat/Hello-World/issues/${issue}`,
    });
    expect(await taskComments(task!.id)).toEqual([
      expect.objectContaining({ source: `issue:${500_000 + issue}`, comment_id: null }),
    ]);
  });

  it("takes no issue whose body mentions no one", async () => {
    await app.deliver("issues", issueOpened({ issueNumber: issue, body: "Just a bug report" }));
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toEqual([]);
  });
});

it("leaves no delivery pending or failed after these tests", async () => {
  const counts = await countDeliveries(db.pool);
  expect(counts.pending).toBe(0);
  expect(counts.failed).toBe(0);
});

async function waitFor(cond: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}
