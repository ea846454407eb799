import pg from "pg";
import { describe, expect, it } from "vitest";
import type { DescribeStatus, StatusRequest } from "../../src/intake/status.js";
import { cancelKey } from "../../src/sql/tasks/cancel.js";
import { intakeFile } from "../helpers/intake-file.js";
import {
  commentCreated,
  commentEdited,
  INSTALLATION_ID,
  REPO_KEY,
} from "../helpers/intake-payloads.js";
import { readEpoch } from "../../src/sql/history.js";
import { createTestApp } from "../helpers/probot.js";
import { github } from "../helpers/intake-github.js";
import { readTask, readTasks, repoIdOf, seedTask } from "../helpers/seed.js";

const t = await intakeFile({ issue: 400, commentId: 40_000 });
const { db } = t;

/** token, no config, a writer, 👀: what every accepted comment costs. */
const accepted = () =>
  github()
    .token(INSTALLATION_ID)
    .noConfig()
    .permission("Codertocat", "write")
    .reactToComment(t.commentId);
const say = (body: string, id?: string) =>
  t.app.deliver(
    "issue_comment",
    commentCreated({ commentId: t.commentId, issueNumber: t.issue, body }),
    id,
  );
const key = () => ({ repo: REPO_KEY, issue_number: t.issue });

describe("/cancel", () => {
  it("cancels the key's queued task and says so", async () => {
    const queued = await seedTask(db.pool, { ...key(), status: "queued" });
    const reply = accepted().reply(t.issue);
    await say("@tether /cancel");
    expect(await readTask(db.pool, queued.id)).toMatchObject({
      status: "cancelled",
      outcome: "cancelled",
      failure_reason: expect.stringMatching(
        /^cancelled by Codertocat \(https:\/\/github\.com\/.*#issuecomment-\d+\)$/,
      ),
      finished_at: expect.any(Date),
    });
    expect(reply.bodies).toEqual(["`@tether`: cancelled the queued turn."]);
  });

  it("flags the running task for its runner and NOTIFYs tether_cancel; a new task is not started", async () => {
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const notes: string[] = [];
    listener.on("notification", (n) => notes.push(`${n.channel}:${n.payload}`));
    await listener.query("LISTEN tether_cancel");
    try {
      const running = await seedTask(db.pool, { ...key(), status: "running" });
      const reply = accepted().reply(t.issue);
      await say("@tether /cancel");
      expect(await readTask(db.pool, running.id)).toMatchObject({
        status: "running",
        cancel_requested: true,
      });
      expect(await readTasks(db.pool, "issue_number = $1", [t.issue])).toHaveLength(1);
      await waitFor(() => notes.length > 0);
      expect(notes).toEqual([`tether_cancel:${running.id}`]);
      expect(reply.bodies).toEqual(["`@tether`: asked the running turn to stop."]);
    } finally {
      await listener.end();
    }
  });

  it("touches only the addressed agent's key", async () => {
    const mine = await seedTask(db.pool, { ...key(), agent: "tether", status: "queued" });
    const other = await seedTask(db.pool, { ...key(), agent: "reviewer", status: "queued" });
    accepted().reply(t.issue);
    await say("@tether /cancel");
    expect((await readTask(db.pool, mine.id)).status).toBe("cancelled");
    expect((await readTask(db.pool, other.id)).status).toBe("queued");
  });

  it("says when there is nothing to cancel", async () => {
    const reply = accepted().reply(t.issue);
    await say("@tether /cancel");
    expect(reply.bodies).toEqual(["`@tether`: nothing to cancel."]);
  });

  it("never cancels a task queued after the /cancel arrived (safe to process twice)", async () => {
    const asOf = new Date(Date.now() - 60_000);
    const later = await seedTask(db.pool, { ...key(), status: "queued" });
    const r = await cancelKey(
      db.pool,
      { repoId: repoIdOf(REPO_KEY), repo: REPO_KEY, issueNumber: t.issue, agent: "tether" },
      { asOf, reason: "x" },
    );
    expect(r).toEqual({ cancelled: [], stopRequested: [] });
    expect((await readTask(db.pool, later.id)).status).toBe("queued");
  });
});

describe("/help", () => {
  it("replies with the commands, mentions in code so nobody is pinged, and queues nothing", async () => {
    const reply = accepted().reply(t.issue);
    await say("@tether /help");
    expect(await readTasks(db.pool, "issue_number = $1", [t.issue])).toEqual([]);
    const body = reply.bodies[0]!;
    for (const cmd of ["/fresh", "/cancel", "/status", "/help"])
      expect(body).toContain(`\`@tether ${cmd}`);
    expect(body).toContain(".github/tether.yml");
    expect(body.replace(/`[^`]*`/g, "")).not.toMatch(/@tether/);
  });
});

describe("/status", () => {
  it("replies with the key's running and queued tasks and last session, and queues nothing", async () => {
    const running = await seedTask(db.pool, {
      ...key(),
      status: "running",
      session_id: "sess-1",
      started_at: new Date(),
    });
    await db.pool.query(
      "INSERT INTO sessions (session_id, repo, issue_number, agent, state, repo_id) VALUES ('sess-1', $1, $2, 'tether', 'active', $3)",
      [REPO_KEY, t.issue, repoIdOf(REPO_KEY)],
    );
    const queued = await seedTask(db.pool, { ...key(), status: "queued", force_fresh: true });
    const reply = accepted().reply(t.issue);
    await say("@tether /status");
    expect(await readTasks(db.pool, "issue_number = $1", [t.issue])).toHaveLength(2);
    const body = reply.bodies[0]!;
    expect(body).toContain("`@tether` on this issue");
    expect(body).toMatch(new RegExp(`Running: task ${running.id} for \\[octocat's comment\\]`));
    expect(body).toMatch(new RegExp(`Queued: task ${queued.id} .*\\(fresh session requested\\)`));
    expect(body).toContain("Last session: `sess-1` (active)");
  });

  it("covers every agent with tasks on the issue, the addressed one first", async () => {
    await seedTask(db.pool, { ...key(), agent: "reviewer", status: "queued" });
    const reply = accepted().reply(t.issue);
    await say("@tether /status");
    const body = reply.bodies[0]!;
    const tether = body.indexOf("`@tether` on this issue");
    const reviewer = body.indexOf("`@reviewer` on this issue");
    expect(tether).toBeGreaterThanOrEqual(0);
    expect(reviewer).toBeGreaterThan(tether);
  });

  it("says an idle key with no session starts fresh", async () => {
    const reply = accepted().reply(t.issue);
    await say("@tether /status");
    expect(reply.bodies[0]).toContain("Idle: nothing running or queued.");
    expect(reply.bodies[0]).toContain("No session yet: the next turn starts fresh.");
  });

  it("uses the describeStatus the runner plugs in", async () => {
    const seen: StatusRequest[] = [];
    const describeStatus: DescribeStatus = async (req) => {
      seen.push(req);
      return "Next turn: resumes `sess-9` (reason: resumed)";
    };
    t.app = await createTestApp(db, { describeStatus });
    const reply = accepted().reply(t.issue);
    await say("@tether /status");
    expect(reply.bodies).toEqual(["Next turn: resumes `sess-9` (reason: resumed)"]);
    expect(seen[0]).toMatchObject({
      repoId: repoIdOf(REPO_KEY),
      repo: REPO_KEY,
      issueNumber: t.issue,
      agents: ["tether"],
    });
  });
});

describe("commands in one comment", () => {
  it("cancel one agent and ask another: one task, for the other agent only", async () => {
    const gh = github()
      .token(INSTALLATION_ID)
      .config("agents:\n  reviewer: {}\n")
      .permission("Codertocat", "write")
      .reactToComment(t.commentId);
    gh.reply(t.issue);
    await say("@tether /cancel\n@reviewer take over please");
    expect((await readTasks(db.pool, "issue_number = $1", [t.issue])).map((t) => t.agent)).toEqual([
      "reviewer",
    ]);
  });
});

async function waitFor(cond: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

describe("a comment on a conversation's pull request", () => {
  const pr = () => t.issue + 5000;
  const conversation = async (agent = "tether") =>
    db.pool.query(
      `INSERT INTO conversation_branches (repo, issue_number, agent, branch, base_branch, head_sha, pull_number, pull_url, commits, repo_id)
       VALUES ($1, $2, $3, $4, 'main', $5, $6, $7, 1, $8)`,
      [
        REPO_KEY,
        t.issue,
        agent,
        `tether/${t.issue}-${agent}`,
        "a".repeat(40),
        pr(),
        `https://github.com/x/pull/${pr()}`,
        repoIdOf(REPO_KEY),
      ],
    );
  const onPull = (body: string) =>
    t.app.deliver(
      "issue_comment",
      commentCreated({ commentId: t.commentId, issueNumber: pr(), body, pullRequest: true }),
    );

  it("is a turn of the issue's key, answered on the pull request", async () => {
    await conversation();
    accepted();
    await onPull("@tether rename it");
    const [task] = await readTasks(db.pool, "repo = $1 AND issue_number = $2", [REPO_KEY, t.issue]);
    expect(task).toMatchObject({
      issue_number: t.issue,
      thread_number: pr(),
      is_pull_request: false,
      agent: "tether",
      trigger_body: "@tether rename it",
    });
    expect(await readTasks(db.pool, "issue_number = $1", [pr()])).toEqual([]);
  });

  it("editing it changes the issue's queued turn; once that turn ran, the issue key's history moved", async () => {
    await conversation();
    accepted();
    await onPull("@tether rename it");
    const [task] = await readTasks(db.pool, "repo = $1 AND issue_number = $2", [REPO_KEY, t.issue]);
    const edit = (body: string, previousBody: string) => {
      github().noConfig().permission("Codertocat", "write"); // its editor is judged
      return t.app.deliver(
        "issue_comment",
        commentEdited({
          commentId: t.commentId,
          issueNumber: pr(),
          body,
          previousBody,
          pullRequest: true,
        }),
      );
    };
    await edit("@tether rename it to parseLines", "@tether rename it");
    expect(await readTask(db.pool, task!.id)).toMatchObject({
      status: "queued",
      trigger_body: "@tether rename it to parseLines",
    });
    await db.pool.query(
      `UPDATE tasks SET status = 'succeeded', session_id = 'sess-pr', started_at = now(), finished_at = now()
        WHERE id = $1`,
      [task!.id],
    );
    await edit("@tether rename it to splitLines", "@tether rename it to parseLines");
    expect(
      await readEpoch(db.pool, {
        repoId: repoIdOf(REPO_KEY),
        repo: REPO_KEY,
        issueNumber: t.issue,
        agent: "tether",
      }),
    ).toBe(1);
  });

  it("/cancel there cancels the issue's queued turn", async () => {
    await conversation();
    const queued = await seedTask(db.pool, { ...key(), status: "queued" });
    accepted().reply(pr());
    await onPull("@tether /cancel");
    expect((await readTask(db.pool, queued.id)).status).toBe("cancelled");
  });

  it("addressing another agent is that agent's turn on the pull request itself", async () => {
    await conversation("tether");
    github()
      .token(INSTALLATION_ID)
      .config("agents:\n  reviewer: {}\n")
      .permission("Codertocat", "write")
      .reactToComment(t.commentId);
    await onPull("@reviewer look at this");
    const tasks = await readTasks(db.pool, "issue_number = $1", [pr()]);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      agent: "reviewer",
      is_pull_request: true,
      thread_number: null,
    });
  });
});
