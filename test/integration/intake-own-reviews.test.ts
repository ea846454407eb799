/**
 * Tether's own reviews and line comments never start a turn (#38), even with its bot in
 * `access.allowBots`: a review Tether posts on a conversation's pull request, or its line
 * comments quoting `@tether`, would otherwise ask an agent again, and again. Reviews carry no
 * `performed_via_github_app`: Tether knows its own by its bot's login, `<app slug>[bot]`
 * (GET /app, asked once and only for an allow-listed bot).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { readDelivery } from "../../src/sql/deliveries.js";
import { recordPull, recordPush } from "../../src/sql/conversations.js";
import { createTestDatabase } from "../helpers/db.js";
import {
  INSTALLATION_ID,
  REPO_KEY,
  reviewCommentCreated,
  reviewSubmitted,
} from "../helpers/intake-payloads.js";
import { createTestApp, type TestApp } from "../helpers/probot.js";
import { github, useNock } from "../helpers/intake-github.js";
import { readTasks, repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
useNock();

let app: TestApp;
let n = 4400;
let id = 440_000;
beforeEach(async () => {
  app = await createTestApp(db);
  n += 10;
  id++;
});

const BOT = { login: "tether[bot]", type: "Bot" as const };
const ALLOW_TETHER =
  "access:\n  allowBots: [tether, renovate]\nagents:\n  tether:\n    reviews: all\n";
const tasks = () => readTasks(db.pool, "issue_number IN ($1, $2)", [n, n + 5]);

/** The pull request `n + 5` Tether opened for issue `n`'s conversation. */
async function conversation(): Promise<void> {
  const key = { repoId: repoIdOf(REPO_KEY), repo: REPO_KEY, issueNumber: n, agent: "tether" };
  await recordPush(db.pool, {
    ...key,
    branch: `tether/${n}-tether`,
    baseBranch: "main",
    headSha: "a".repeat(40),
    commits: 1,
  });
  await recordPull(db.pool, key, {
    number: n + 5,
    url: `https://github.com/Codertocat/Hello-World/pull/${n + 5}`,
  });
}

describe("Tether's own review", () => {
  it("mentioning @tether starts nothing, though its bot is allow-listed", async () => {
    github().token(INSTALLATION_ID).config(ALLOW_TETHER).app("tether");
    await app.deliver(
      "pull_request_review",
      reviewSubmitted({
        reviewId: id,
        pullNumber: n + 7,
        body: "@tether please also fix the README",
        author: BOT,
        state: "commented",
      }),
      `r-${id}`,
    );
    expect(await tasks()).toEqual([]);
    expect((await readDelivery(db.pool, `r-${id}`))?.outcome).toBe(
      "refused: tether[bot] is Tether's own bot",
    );
  });

  it("requesting changes on a conversation's own pull request starts no turn without a mention", async () => {
    await conversation();
    github().token(INSTALLATION_ID).config(ALLOW_TETHER).app("tether");
    await app.deliver(
      "pull_request_review",
      reviewSubmitted({
        reviewId: id,
        pullNumber: n + 5,
        body: "Rename this.",
        author: BOT,
        state: "changes_requested",
      }),
    );
    expect(await tasks()).toEqual([]);
  });

  it("a line comment of its review mentioning @tether starts nothing", async () => {
    github().token(INSTALLATION_ID).config(ALLOW_TETHER).app("tether");
    await app.deliver(
      "pull_request_review_comment",
      reviewCommentCreated({
        commentId: id,
        pullNumber: n + 5,
        body: "@tether rename this to parseConfig",
        author: BOT,
        path: "src/app.ts",
      }),
    );
    expect(await tasks()).toEqual([]);
  });

  it("another allow-listed bot's review still starts a turn", async () => {
    await conversation();
    github()
      .token(INSTALLATION_ID)
      .config(ALLOW_TETHER)
      .app("tether")
      .reviewLineComments(n + 5, id);
    await app.deliver(
      "pull_request_review",
      reviewSubmitted({
        reviewId: id,
        pullNumber: n + 5,
        body: "Bump the lock file.",
        author: { login: "renovate[bot]", type: "Bot" },
        state: "changes_requested",
      }),
    );
    expect(await tasks()).toHaveLength(1);
  });
});
