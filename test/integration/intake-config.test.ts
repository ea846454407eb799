import { beforeEach, describe, expect, it } from "vitest";
import { readDelivery } from "../../src/sql/deliveries.js";
import { createTestDatabase } from "../helpers/db.js";
import { commentCreated, INSTALLATION_ID } from "../helpers/intake-payloads.js";
import { createTestApp, type TestApp } from "../helpers/probot.js";
import { github, useNock } from "../helpers/intake-github.js";
import { readTasks } from "../helpers/seed.js";

const db = await createTestDatabase();
useNock();

let app: TestApp;
let issue = 300;
let commentId = 30_000;
beforeEach(async () => {
  app = await createTestApp(db);
  issue++;
  commentId++;
});

const BROKEN = [
  "agents:",
  "  tether:",
  "    modle: claude-opus-4-1",
  "    maxTurns: 0",
  "  reviewer:",
  "    mention: '@rb'",
  "resume:",
  "  contextBudget: 2",
  "",
].join("\n");

describe("an invalid .github/tether.yml", () => {
  it("gets one reply naming the file and each problem, a 👀, and no task", async () => {
    const gh = github()
      .token(INSTALLATION_ID)
      .config(BROKEN)
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    const reply = gh.reply(issue);
    const id = `cfg-${issue}`;
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@tether go" }),
      id,
    );

    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toEqual([]);
    expect(reply.bodies).toHaveLength(1);
    const lines = reply.bodies[0]!.split("\n");
    expect(lines[0]).toBe("Invalid config in .github/tether.yml:");
    expect(lines.filter((l) => l.startsWith("- ")).sort()).toEqual([
      "- `agents.tether.maxTurns`: must be at least 1",
      '- `agents.tether.modle`: unknown setting; did you mean "model"?',
      "- `resume.contextBudget`: must be at most 1 (the whole window)",
    ]);
    expect(await readDelivery(db.pool, id)).toMatchObject({
      status: "done",
      outcome: expect.stringMatching(/^invalid config \(3 problem/),
    });
  });

  it("answers a comment addressed to an agent the broken file defines", async () => {
    const gh = github()
      .token(INSTALLATION_ID)
      .config(BROKEN)
      .permission("Codertocat", "admin")
      .reactToComment(commentId);
    const reply = gh.reply(issue);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@rb look" }),
    );
    expect(reply.bodies).toHaveLength(1);
  });

  it("does not answer comments that address no agent", async () => {
    github().token(INSTALLATION_ID).config(BROKEN);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@alice look" }),
    );
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toEqual([]);
  });

  it("does not answer someone who may not use Tether anyway", async () => {
    github().token(INSTALLATION_ID).config(BROKEN).permission("mallory", "read");
    await app.deliver(
      "issue_comment",
      commentCreated({
        commentId,
        issueNumber: issue,
        body: "@tether go",
        author: { login: "mallory" },
      }),
    );
    expect(await readTasks(db.pool, "issue_number = $1", [issue])).toEqual([]);
  });

  it("replies once per comment: the same comment delivered again gets no second reply", async () => {
    const gh = github()
      .token(INSTALLATION_ID)
      .config(BROKEN)
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    const reply = gh.reply(issue);
    const payload = commentCreated({ commentId, issueNumber: issue, body: "@tether go" });
    await app.deliver("issue_comment", payload, `cfg-a-${issue}`);
    await app.deliver("issue_comment", payload, `cfg-b-${issue}`);
    expect(reply.bodies).toHaveLength(1);
  });

  it("reports unreadable YAML the same way", async () => {
    const gh = github()
      .token(INSTALLATION_ID)
      .config("agents: [\n")
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    const reply = gh.reply(issue);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@tether go" }),
    );
    expect(reply.bodies[0]).toMatch(
      /^Invalid config in \.github\/tether\.yml:\n\n- `\(file\)`: Configuration could not be parsed/,
    );
  });
});

describe("a valid config", () => {
  it("addresses agents by their configured mention, and the default agent no longer by @tether when renamed", async () => {
    const yaml = "agents:\n  tether:\n    mention: '@claude'\n";
    github()
      .token(INSTALLATION_ID)
      .config(yaml)
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@claude fix it" }),
    );
    expect((await readTasks(db.pool, "issue_number = $1", [issue])).map((t) => t.agent)).toEqual([
      "tether",
    ]);

    app = await createTestApp(db);
    github().token(INSTALLATION_ID).config(yaml);
    const id = `renamed-${issue}`;
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId: commentId + 500, issueNumber: issue, body: "@tether fix it" }),
      id,
    );
    expect(await readDelivery(db.pool, id)).toMatchObject({
      status: "skipped",
      outcome: "addresses no agent",
    });
  });

  it("stores the settings the comment was accepted under on its task; a later comment's replace them", async () => {
    github()
      .token(INSTALLATION_ID)
      .config("agents:\n  tether:\n    model: claude-opus-4-1\n    timeoutMinutes: 12\n")
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@tether first" }),
    );
    const [task] = await readTasks(db.pool, "issue_number = $1", [issue]);
    expect(task?.repo_settings).toMatchObject({
      v: 2,
      agents: { tether: { name: "tether", model: "claude-opus-4-1", timeoutMinutes: 12 } },
      resume: { enabled: true },
    });

    // The config changed before the task ran: the coalesced comment brings the new settings.
    github()
      .config("agents:\n  tether:\n    model: claude-sonnet-4-5\n")
      .permission("Codertocat", "write")
      .reactToComment(commentId + 7000);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId: commentId + 7000, issueNumber: issue, body: "@tether second" }),
    );
    const tasks = await readTasks(db.pool, "issue_number = $1", [issue]);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]?.repo_settings).toMatchObject({
      agents: { tether: { model: "claude-sonnet-4-5", timeoutMinutes: 30 } },
    });
  });

  it("asks for the org's file alongside the repository's once the repository had none of its own", async () => {
    const repoPath = "/repos/Codertocat/Hello-World/contents/.github%2Ftether.yml";
    const orgPath = "/repos/Codertocat/.github/contents/.github%2Ftether.yml";
    const orgYaml = "agents:\n  helper: {}\n";
    const first = github().token(INSTALLATION_ID);
    first.api.get(repoPath).reply(404);
    first.config(orgYaml, "/repos/Codertocat/.github").permission("Codertocat", "write");
    first.reactToComment(commentId);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@helper one" }),
    );

    // Second comment: the repository's answer is held until the org's request has arrived.
    // Asked one after the other, the org file would only be asked for after it, and the held
    // answer would give up after 3 s with the order recorded.
    const order: string[] = [];
    let orgAsked!: () => void;
    const asked = new Promise<void>((r) => (orgAsked = r));
    const second = github();
    second.api.get(repoPath).reply(async () => {
      order.push("repo asked");
      await Promise.race([asked, new Promise((r) => setTimeout(r, 3000))]);
      order.push("repo answered");
      return [404, { message: "Not Found" }];
    });
    second.api.get(orgPath).reply(() => {
      order.push("org asked");
      orgAsked();
      return [200, orgYaml, { "content-type": "text/plain; charset=utf-8" }];
    });
    second.permission("Codertocat", "write").reactToComment(commentId + 7001);
    await app.deliver(
      "issue_comment",
      commentCreated({
        commentId: commentId + 7001,
        issueNumber: issue + 7001,
        body: "@helper two",
      }),
    );
    expect(order.indexOf("org asked")).toBeLessThan(order.indexOf("repo answered"));
    expect(
      (await readTasks(db.pool, "issue_number = $1", [issue + 7001])).map((t) => t.agent),
    ).toEqual(["helper"]);
  });

  it("uses a file the repository has gained since, though the org's was asked for too", async () => {
    const repoPath = "/repos/Codertocat/Hello-World/contents/.github%2Ftether.yml";
    const first = github().token(INSTALLATION_ID);
    first.api.get(repoPath).reply(404);
    first.config("agents:\n  helper: {}\n", "/repos/Codertocat/.github");
    first.permission("Codertocat", "write").reactToComment(commentId);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@helper one" }),
    );
    github()
      .config("agents:\n  tether:\n    model: claude-opus-4-1\n")
      .config("agents:\n  helper: {}\n", "/repos/Codertocat/.github")
      .permission("Codertocat", "write")
      .reactToComment(commentId + 7002);
    await app.deliver(
      "issue_comment",
      commentCreated({
        commentId: commentId + 7002,
        issueNumber: issue + 7002,
        body: "@tether two",
      }),
    );
    const [task] = await readTasks(db.pool, "issue_number = $1", [issue + 7002]);
    expect(task?.repo_settings).toMatchObject({
      agents: { tether: { model: "claude-opus-4-1" } },
    });
  });

  it("does not ask for the org's file for a repository that has its own", async () => {
    github()
      .token(INSTALLATION_ID)
      .config("agents:\n  tether: {}\n")
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@tether one" }),
    );
    // Only the repository's file: an org request would match no interceptor and fail the test.
    github()
      .config("agents:\n  tether: {}\n")
      .permission("Codertocat", "write")
      .reactToComment(commentId + 7003);
    await app.deliver(
      "issue_comment",
      commentCreated({
        commentId: commentId + 7003,
        issueNumber: issue + 7003,
        body: "@tether two",
      }),
    );
    expect(await readTasks(db.pool, "issue_number = $1", [issue + 7003])).toHaveLength(1);
  });

  it("comes from the organisation's .github repository when the repository has none", async () => {
    const gh = github().token(INSTALLATION_ID);
    gh.api.get("/repos/Codertocat/Hello-World/contents/.github%2Ftether.yml").reply(404);
    gh.config("agents:\n  helper: {}\n", "/repos/Codertocat/.github")
      .permission("Codertocat", "write")
      .reactToComment(commentId);
    await app.deliver(
      "issue_comment",
      commentCreated({ commentId, issueNumber: issue, body: "@helper hi" }),
    );
    expect((await readTasks(db.pool, "issue_number = $1", [issue])).map((t) => t.agent)).toEqual([
      "helper",
    ]);
  });
});
