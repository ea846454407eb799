import { beforeEach, describe, expect, it } from "vitest";
import { readDelivery } from "../../src/sql/deliveries.js";
import { createTestDatabase } from "../helpers/db.js";
import { commentCreated, INSTALLATION_ID } from "../helpers/intake-payloads.js";
import { APP_ID, createTestApp, type TestApp } from "../helpers/probot.js";
import { github, rest, useNock } from "../helpers/intake-github.js";
import { readTasks } from "../helpers/seed.js";

const db = await createTestDatabase();
useNock();

let app: TestApp;
let issue = 200;
let commentId = 20_000;
beforeEach(async () => {
  app = await createTestApp(db);
  issue++;
  commentId++;
});

async function deliver(
  author: { login: string; type?: "User" | "Bot" },
  opts: { viaAppId?: number } = {},
) {
  const id = `access-${issue}`;
  await app.deliver(
    "issue_comment",
    commentCreated({ commentId, issueNumber: issue, body: "@tether please help", author, ...opts }),
    id,
  );
  return {
    tasks: await readTasks(db.pool, "issue_number = $1", [issue]),
    delivery: await readDelivery(db.pool, id),
  };
}

describe("who may trigger an agent", () => {
  it.each([
    ["write", "write"],
    ["maintain", "maintain"],
    ["admin", "admin"],
  ])("a user with %s permission (default minimum: write)", async (_label, role) => {
    github().token(INSTALLATION_ID).noConfig().permission("alice", role).reactToComment(commentId);
    const { tasks } = await deliver({ login: "alice" });
    expect(tasks).toHaveLength(1);
  });

  it.each([
    ["read", "read", "read"],
    ["triage", "triage", "read"],
    ["no", "none", "none"],
  ])(
    "refuses a user with %s permission: no task, no reaction, no reply",
    async (_label, role, legacy) => {
      github().token(INSTALLATION_ID).noConfig().permission("mallory", role, legacy);
      const { tasks, delivery } = await deliver({ login: "mallory" });
      expect(tasks).toEqual([]);
      expect(delivery).toMatchObject({
        status: "skipped",
        outcome: `refused: mallory has ${role} permission; access.minPermission is write`,
      });
    },
  );

  it("refuses someone GitHub does not know as a collaborator (404)", async () => {
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .api.get("/repos/Codertocat/Hello-World/collaborators/stranger/permission")
      .reply(404, { message: "Not Found" });
    const { tasks, delivery } = await deliver({ login: "stranger" });
    expect(tasks).toEqual([]);
    expect(delivery?.outcome).toMatch(/^refused: stranger has none permission/);
  });

  it("honours a lower configured minimum: triage", async () => {
    github()
      .token(INSTALLATION_ID)
      .config("access:\n  minPermission: triage\n")
      .permission("trish", "triage", "read")
      .reactToComment(commentId);
    const { tasks } = await deliver({ login: "trish" });
    expect(tasks).toHaveLength(1);
  });

  it("lets an allow-listed user in without asking GitHub for their permission", async () => {
    github()
      .token(INSTALLATION_ID)
      .config("access:\n  allowUsers: [Guest]\n")
      .reactToComment(commentId);
    const { tasks } = await deliver({ login: "guest" });
    expect(tasks).toHaveLength(1);
  });

  it("on a repository it has read before, asks for the permission alongside the config", async () => {
    github()
      .token(INSTALLATION_ID)
      .noConfig()
      .permission("alice", "write")
      .reactToComment(commentId);
    expect((await deliver({ login: "alice" })).tasks).toHaveLength(1);

    // The second comment: the config answer is held until the permission request has arrived.
    // Asked one after the other, the permission request would only come after the config, and
    // the held answer would give up after 3 s with the order recorded.
    issue++;
    commentId++;
    const order: string[] = [];
    let permissionAsked!: () => void;
    const asked = new Promise<void>((r) => (permissionAsked = r));
    const gh = github();
    const configPath = "/repos/Codertocat/Hello-World/contents/.github%2Ftether.yml";
    gh.api.get(configPath).reply(async () => {
      order.push("config asked");
      await Promise.race([asked, new Promise((r) => setTimeout(r, 3000))]);
      order.push("config answered");
      return [404, { message: "Not Found" }];
    });
    gh.api
      .get("/repos/Codertocat/.github/contents/.github%2Ftether.yml")
      .reply(404, { message: "Not Found" });
    gh.api.get("/repos/Codertocat/Hello-World/collaborators/alice/permission").reply(() => {
      order.push("permission asked");
      permissionAsked();
      const user = { ...rest.user("alice"), role_name: "write" };
      return [200, { permission: "write", role_name: "write", user }];
    });
    gh.reactToComment(commentId);
    expect((await deliver({ login: "alice" })).tasks).toHaveLength(1);
    expect(order.indexOf("permission asked")).toBeLessThan(order.indexOf("config answered"));
  });

  it("still never asks for an allow-listed user's permission on a repository it knows", async () => {
    github()
      .token(INSTALLATION_ID)
      .config("access:\n  allowUsers: [Guest]\n")
      .reactToComment(commentId);
    expect((await deliver({ login: "guest" })).tasks).toHaveLength(1);
    issue++;
    commentId++;
    github().config("access:\n  allowUsers: [Guest]\n").reactToComment(commentId);
    expect((await deliver({ login: "Guest" })).tasks).toHaveLength(1);
  });

  it("never lets a bot in unless allow-listed, whatever its permission", async () => {
    github().token(INSTALLATION_ID).noConfig();
    const { tasks, delivery } = await deliver({ login: "dependabot[bot]", type: "Bot" });
    expect(tasks).toEqual([]);
    expect(delivery?.outcome).toBe("refused: dependabot[bot] is a bot and not in access.allowBots");
  });

  it("lets an allow-listed bot in (with or without the [bot] suffix in the list)", async () => {
    github()
      .token(INSTALLATION_ID)
      .config("access:\n  allowBots: [renovate]\n")
      .app("tether") // is it Tether's own bot? (never allowed: intake-own-reviews.test.ts)
      .reactToComment(commentId);
    const { tasks } = await deliver({ login: "renovate[bot]", type: "Bot" });
    expect(tasks).toHaveLength(1);
  });

  it("drops Tether's own comments in the webhook, even if its bot were allow-listed: no GitHub call at all", async () => {
    const { tasks, delivery } = await deliver(
      { login: "tether[bot]", type: "Bot" },
      { viaAppId: APP_ID },
    );
    expect(tasks).toEqual([]);
    expect(delivery).toBeUndefined();
  });

  it("takes comments another GitHub App wrote through to the access check", async () => {
    github().token(INSTALLATION_ID).noConfig();
    const { delivery } = await deliver(
      { login: "other-app[bot]", type: "Bot" },
      { viaAppId: APP_ID + 1 },
    );
    expect(delivery?.outcome).toMatch(/^refused: other-app\[bot\] is a bot/);
  });
});
