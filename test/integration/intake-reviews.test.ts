/**
 * `@tether` in a pull request review comment (a comment on a line of the diff) or in a review's
 * body asks like a comment in the pull request's conversation: same task key (the pull request's
 * number), answered in the conversation. A review comment's request says where it sits.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import type { Agent, AgentRunRequest } from "../../src/runner/ports.js";
import { runTask } from "../../src/runner/turn/run-task.js";
import { readDelivery } from "../../src/sql/deliveries.js";
import { readEpoch } from "../../src/sql/history.js";
import { registerRuntime } from "../../src/sql/runtimes.js";
import { claimTasks } from "../../src/sql/tasks/claim.js";
import { postgresTurnStore } from "../../src/sql/turn-store.js";
import { createTestDatabase } from "../helpers/db.js";
import { agentDefaults, fakeThread, fakeWorkspace } from "../helpers/runner-fakes.js";
import {
  commentCreated,
  INSTALLATION_ID,
  REPO_KEY,
  reviewCommentCreated,
  reviewCommentDeleted,
  reviewCommentEdited,
  reviewSubmitted,
  type ReviewCommentOptions,
} from "../helpers/intake-payloads.js";
import { createTestApp, type TestApp } from "../helpers/probot.js";
import { github, useNock } from "../helpers/intake-github.js";
import { readTask, readTasks, seedTask } from "../helpers/seed.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
useNock();

let app: TestApp;
let pr = 700;
let id = 880_000;
beforeEach(async () => {
  app = await createTestApp(db);
  pr++;
  id++;
});

const HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const NOTE_42 = `[Review comment on \`src/app.ts\`, line 42 of the pull request's version (the right side of the diff) at commit ${HEAD}.]`;
const T0 = new Date("2030-01-01T10:00:00Z");
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);

const onLine42 = (o: Partial<ReviewCommentOptions> = {}): ReviewCommentOptions => ({
  commentId: id,
  pullNumber: pr,
  body: "@tether rename this to parseConfig",
  path: "src/app.ts",
  place: { line: 42, start_line: null, side: "RIGHT", commit_id: HEAD },
  ...o,
});

const taskComments = async (taskId: unknown) =>
  (
    await db.pool.query(
      "SELECT source, agent, comment_id, url, body FROM task_comments WHERE task_id = $1 ORDER BY created_at, source",
      [taskId],
    )
  ).rows;

/** A writer's review comment: token, config, permission, and the 👀 on the review comment. */
function acceptedReviewComment(commentId = id) {
  return github()
    .token(INSTALLATION_ID)
    .noConfig()
    .permission("Codertocat", "write")
    .reactToReviewComment(commentId);
}

describe("pull_request_review_comment.created", () => {
  it("queues a task on the pull request's key whose request says which file and line, and puts 👀 on the review comment", async () => {
    acceptedReviewComment();
    await app.deliver("pull_request_review_comment", reviewCommentCreated(onLine42()));

    const tasks = await readTasks(db.pool, "issue_number = $1", [pr]);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      repo: REPO_KEY,
      issue_number: pr,
      agent: "tether",
      status: "queued",
      is_pull_request: true,
      trigger_comment_id: id,
      trigger_author: "Codertocat",
      trigger_url: `https://github.com/Codertocat/Hello-World/pull/${pr}#discussion_r${id}`,
      trigger_body: `${NOTE_42}\n\n@tether rename this to parseConfig`,
    });
    expect(await taskComments(tasks[0]!.id)).toEqual([
      {
        source: `review_comment:${id}`,
        agent: "tether",
        comment_id: id,
        url: `https://github.com/Codertocat/Hello-World/pull/${pr}#discussion_r${id}`,
        body: `${NOTE_42}\n\n@tether rename this to parseConfig`,
      },
    ]);
  });

  it("reaches the agent: the prompt's request names the file and line, and the answer goes to the pull request's conversation", async () => {
    acceptedReviewComment();
    await app.deliver("pull_request_review_comment", reviewCommentCreated(onLine42()));
    const [queued] = await readTasks(db.pool, "issue_number = $1", [pr]);

    await registerRuntime(db.pool, {
      id: "rt-review",
      hostname: "h",
      homeDir: "/h",
      cliPath: "/c",
      cliVersion: "x",
      canResume: true,
      concurrency: 1,
    });
    // Earlier tests' tasks are still queued in this file's database: only this one may be claimed.
    await db.pool.query(
      "UPDATE tasks SET status = 'cancelled' WHERE status = 'queued' AND id <> $1",
      [queued!.id],
    );
    const [task] = await claimTasks(db.pool, "runner-review", "rt-review", 1);
    expect(task?.id).toBe(queued!.id);
    const prompts: string[] = [];
    const agent: Agent = {
      ...agentDefaults,
      run: async (req: AgentRunRequest) => {
        prompts.push(req.prompt);
        await req.onSession("sess-review", "m");
        return {
          outcome: "success",
          sessionId: "sess-review",
          text: "Renamed.",
          usage: null,
          contextWindow: null,
          toolRan: false,
          detail: null,
        };
      },
    };
    const thread = fakeThread();
    const postedOn: number[] = [];
    const createComment = thread.createComment;
    thread.createComment = (n, body) => {
      postedOn.push(n);
      return createComment(n, body);
    };
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-review-"));
    try {
      await runTask(
        {
          store: postgresTurnStore(db.pool),
          log: createLogger("silent"),
          runnerId: "runner-review",
          runtimeId: "rt-review",
          agent,
          workspace: fakeWorkspace(root),
          github: async () => thread,
          progressIntervalMs: 0,
        },
        task!,
        new AbortController().signal,
      );
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }

    expect(prompts).toHaveLength(1);
    const request = /<request [^>]*>\n([\s\S]*?)\n<\/request>/.exec(prompts[0]!)?.[1];
    expect(request).toBe(`${NOTE_42}\n\n@tether rename this to parseConfig`);
    expect(postedOn).toEqual([pr]);
    expect(await readTask(db.pool, queued!.id)).toMatchObject({ status: "succeeded" });
    expect(thread.comments.at(-1)?.body).toContain("Renamed.");
  });

  it("joins a conversation comment queued on the same pull request: one key, one task", async () => {
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reactToComment(id + 5000);
    await app.deliver(
      "issue_comment",
      commentCreated({
        commentId: id + 5000,
        issueNumber: pr,
        pullRequest: true,
        body: "@tether please review",
        createdAt: at(0).toISOString(),
      }),
    );
    app = await createTestApp(db); // a new Probot: the second token request is real, not cached
    acceptedReviewComment();
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentCreated(onLine42({ createdAt: at(1).toISOString() })),
    );

    const tasks = await readTasks(db.pool, "issue_number = $1", [pr]);
    expect(tasks).toHaveLength(1);
    expect((await taskComments(tasks[0]!.id)).map((c) => c.source)).toEqual([
      `comment:${id + 5000}`,
      `review_comment:${id}`,
    ]);
  });

  it("takes the same access rules: a reader's review comment starts nothing and gets no 👀", async () => {
    github().token(INSTALLATION_ID).noConfig().permission("someone", "read");
    const delivery = `review-reader-${pr}`;
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentCreated(onLine42({ author: { login: "someone" } })),
      delivery,
    );
    expect(await readTasks(db.pool, "issue_number = $1", [pr])).toEqual([]);
    expect(await readDelivery(db.pool, delivery)).toMatchObject({
      status: "skipped",
      outcome: "refused: someone has read permission; access.minPermission is write",
    });
  });

  it("takes commands: /cancel in a review comment cancels the pull request's queued task", async () => {
    const task = await seedTask(db.pool, { repo: REPO_KEY, issue_number: pr });
    github().token(INSTALLATION_ID).noConfig().permission("Codertocat", "write");
    const gh = github().reactToReviewComment(id);
    const reply = gh.reply(pr);
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentCreated(onLine42({ body: "@tether /cancel" })),
    );
    expect(await readTask(db.pool, task.id)).toMatchObject({ status: "cancelled" });
    expect(reply.bodies).toEqual(["`@tether`: cancelled the queued turn."]);
  });
});

describe("editing or deleting a review comment", () => {
  const queued = async () => {
    acceptedReviewComment();
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentCreated(onLine42({ createdAt: at(0).toISOString() })),
    );
    const [task] = await readTasks(db.pool, "issue_number = $1", [pr]);
    return task!;
  };

  it("an edit updates the queued task's request, with its place noted again", async () => {
    const task = await queued();
    github().noConfig().permission("Codertocat", "write"); // its editor is judged
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentEdited(
        onLine42({
          body: "@tether rename this to loadConfig",
          previousBody: "@tether rename this to parseConfig",
          updatedAt: new Date().toISOString(),
        }),
      ),
    );
    const body = `${NOTE_42}\n\n@tether rename this to loadConfig`;
    expect(await readTask(db.pool, task.id)).toMatchObject({
      status: "queued",
      trigger_body: body,
    });
    expect((await taskComments(task.id)).map((c) => c.body)).toEqual([body]);
  });

  it("a deletion withdraws the request: the task left without comments is cancelled", async () => {
    const task = await queued();
    await app.deliver("pull_request_review_comment", reviewCommentDeleted(onLine42()));
    expect(await readTask(db.pool, task.id)).toMatchObject({
      status: "cancelled",
      failure_reason: "its comment was deleted before it ran",
    });
  });

  it("an edit of a review comment that fed a finished turn bumps that key's history epoch", async () => {
    const task = await queued();
    await db.pool.query(
      `UPDATE tasks SET status = 'succeeded', session_id = 's-1', started_at = $2,
              resume_decision = 'fresh' WHERE id = $1`,
      [task.id, at(5)],
    );
    github().noConfig().permission("Codertocat", "write"); // its editor is judged
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentEdited(
        onLine42({
          body: "@tether rename it",
          previousBody: "@tether rename this",
          createdAt: at(0).toISOString(),
          updatedAt: new Date().toISOString(),
        }),
      ),
    );
    expect(
      await readEpoch(db.pool, {
        repoId: repoIdOf(REPO_KEY),
        repo: REPO_KEY,
        issueNumber: pr,
        agent: "tether",
      }),
    ).toBe(1);
  });

  it("a review comment no turn read is not in a session's history, even if older than a cold turn (cold turns read the conversation, not the diff)", async () => {
    await seedTask(db.pool, {
      repo: REPO_KEY,
      issue_number: pr,
      status: "succeeded",
      session_id: "s-2",
      started_at: at(5),
      resume_decision: "fresh",
    });
    const delivery = `review-edit-unread-${pr}`;
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentEdited(
        onLine42({
          body: "nit: spacing (edited)",
          previousBody: "nit: spacing",
          createdAt: at(1).toISOString(),
          updatedAt: new Date().toISOString(),
        }),
      ),
      delivery,
    );
    expect(
      await readEpoch(db.pool, {
        repoId: repoIdOf(REPO_KEY),
        repo: REPO_KEY,
        issueNumber: pr,
        agent: "tether",
      }),
    ).toBe(0);
    expect(await readDelivery(db.pool, delivery)).toMatchObject({ status: "skipped" });
  });

  it("an edit that adds the mention starts a turn, like a new review comment", async () => {
    acceptedReviewComment();
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentEdited(
        onLine42({
          body: "@tether rename this",
          previousBody: "rename this?",
          updatedAt: new Date().toISOString(),
        }),
      ),
    );
    const tasks = await readTasks(db.pool, "issue_number = $1", [pr]);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      trigger_comment_id: id,
      trigger_body: `${NOTE_42}\n\n@tether rename this`,
    });
  });
});

describe("pull_request_review.submitted", () => {
  it("a review whose body mentions an agent queues a task on the pull request (no 👀: GitHub has no reactions on reviews)", async () => {
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("Codertocat", "write")
      .reviewLineComments(pr, id);
    await app.deliver(
      "pull_request_review",
      reviewSubmitted({
        reviewId: id,
        pullNumber: pr,
        body: "@tether please address the comments above",
        state: "changes_requested",
      }),
    );
    const tasks = await readTasks(db.pool, "issue_number = $1", [pr]);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      is_pull_request: true,
      trigger_url: `https://github.com/Codertocat/Hello-World/pull/${pr}#pullrequestreview-${id}`,
      trigger_body: `[Pull request review (changes requested) at commit ${HEAD}.]\n\n@tether please address the comments above`,
    });
    expect((await taskComments(tasks[0]!.id)).map((c) => c.source)).toEqual([`review:${id}`]);
  });

  it("a review with inline comments that mention the agent becomes one task answering all of them", async () => {
    acceptedReviewComment(id);
    github()
      .noConfig()
      .permission("Codertocat", "write") // the token is cached by then
      .reviewLineComments(pr, id + 1);
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentCreated(onLine42({ createdAt: at(0).toISOString() })),
    );
    await app.deliver(
      "pull_request_review",
      reviewSubmitted({
        reviewId: id + 1,
        pullNumber: pr,
        body: "@tether and fix the rest too",
        submittedAt: at(1).toISOString(),
      }),
    );
    const tasks = await readTasks(db.pool, "issue_number = $1", [pr]);
    expect(tasks).toHaveLength(1);
    expect((await taskComments(tasks[0]!.id)).map((c) => c.source)).toEqual([
      `review_comment:${id}`,
      `review:${id + 1}`,
    ]);
  });
});
