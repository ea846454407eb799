/**
 * Conversations belong to a repository by its id (#38 item 5), end to end: the built app, real
 * Postgres, the real Claude CLI against a fake Messages API, GitHub stood in for. A repository
 * renamed (same id) keeps its conversation: the follow-up under the new name resumes, and the
 * model is sent the earlier messages. A new repository under an old name (a new id) starts with
 * nothing: no session, transcript, workspace or mirror of the old one, which the fake API's
 * requests (what the agent saw of its checkout) and the files on disk show.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/db.js";
import { startStack, type Stack } from "../helpers/e2e-stack.js";
import { replies, userTexts, type FakeRequest } from "../helpers/fake-anthropic.js";

const CONFIG = `
agents:
  tether:
    model: claude-sonnet-4-5
`;

const db = await createTestDatabase();
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ pool: db.pool, databaseUrl: db.url, config: CONFIG });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

async function newRepo(owner: string, name: string, files: Record<string, string>) {
  const json = await stack.gh.addRepo({ owner, name, files });
  await stack.gh.setConfig(`${owner}/${name}`, CONFIG);
  return json.id as number;
}

/** A comment on `repo`'s issue, delivered as GitHub would (the payload names the repo as it is now). */
async function comment(repo: string, issueNumber: number, body: string): Promise<number> {
  const c = stack.gh.addComment({ repo, issueNumber, body, user: "alice" });
  await stack.deliver(
    stack.gh.webhooks.issueComment({ repo, issueNumber, commentId: c.id as number }),
  );
  return c.id as number;
}

const mark = () => stack.api.requests.length;
const agentRequests = (from: number): FakeRequest[] =>
  stack.api
    .messageRequests()
    .filter(
      (r) =>
        r.n > from && JSON.stringify(r.body?.system ?? "").includes("coding agent run by Tether"),
    );
const sawText = (reqs: FakeRequest[], word: string) =>
  reqs.some((r) => userTexts(r).some((t) => t.includes(word)));
/** Every tool result the CLI sent back to the model (what the agent saw). */
const toolResults = (reqs: FakeRequest[]): string =>
  reqs.map((r) => JSON.stringify(r.body?.messages ?? [])).join("\n");

describe("conversations keyed by the repository id", { timeout: 240_000 }, () => {
  it("a renamed repository (same id) resumes its conversation under the new name", async () => {
    const id = await newRepo("octo", "alpha", { "README.md": "# alpha\n" });
    const issue = stack.gh.addIssue({
      repo: "octo/alpha",
      title: "Split",
      body: "b",
      user: "alice",
    }).number as number;
    const m0 = mark();
    const first = await stack.finishedTask(
      await comment("octo/alpha", issue, "@tether ALPHA-ASK hi"),
    );
    expect(first).toMatchObject({ status: "succeeded", repo: "octo/alpha", repo_id: id });
    expect(sawText(agentRequests(m0), "ALPHA-ASK")).toBe(true);

    stack.gh.renameRepo("octo/alpha", "octo/beta");
    const m1 = mark();
    const ghBefore = stack.gh.requests.length;
    const second = await stack.finishedTask(
      await comment("octo/beta", issue, "@tether BETA-ASK again"),
    );
    expect(second).toMatchObject({
      status: "succeeded",
      repo: "octo/beta",
      repo_id: id,
      resume_decision: "resume",
      resume_reason: "resumed",
      session_id: first.session_id,
      work_dir: first.work_dir,
    });
    // The model was sent the session's earlier messages: a resume, not a cold start.
    const asked = agentRequests(m1);
    expect(sawText(asked, "ALPHA-ASK")).toBe(true);
    expect(sawText(asked, "BETA-ASK")).toBe(true);
    // GitHub is asked under the name the latest webhook gave, never the old one.
    const after = stack.gh.requests.slice(ghBefore).map((r) => r.path);
    expect(after.some((p) => p.includes("/octo/beta"))).toBe(true);
    expect(after.filter((p) => p.includes("/octo/alpha"))).toEqual([]);
  });

  it("a new repository under an old name starts fresh and restores nothing of the old one", async () => {
    const oldId = await newRepo("octo", "gamma", {
      "README.md": "# gamma, the first\n",
      "src/old-only.js": "export const old = 1;\n",
    });
    const issue = stack.gh.addIssue({ repo: "octo/gamma", title: "Old", body: "b", user: "alice" })
      .number as number;
    // The old conversation leaves a note in its checkout.
    stack.api.script(
      replies.toolUse("Write", { file_path: "/workspace/OLD-NOTE.txt", content: "old secret\n" }),
      replies.text("noted"),
    );
    const first = await stack.finishedTask(
      await comment("octo/gamma", issue, "@tether GAMMA-OLD-ASK note it"),
    );
    expect(first).toMatchObject({ status: "succeeded", repo_id: oldId });
    const oldDir = String(first.work_dir);
    expect(fs.existsSync(path.join(oldDir, "OLD-NOTE.txt"))).toBe(true);

    // The repository is deleted and another one is made under its name (a new id), on the same
    // installation; its first issue has the old conversation's number.
    await stack.gh.deleteRepo("octo/gamma");
    const newId = await newRepo("octo", "gamma", { "README.md": "# gamma, the second\n" });
    expect(newId).not.toBe(oldId);
    const newIssue = stack.gh.addIssue({
      repo: "octo/gamma",
      title: "New",
      body: "b",
      user: "alice",
    }).number as number;
    expect(newIssue).toBe(issue);

    const m1 = mark();
    stack.api.script(
      replies.toolUse("Bash", {
        command: "ls -a /workspace /workspace/src 2>&1; cat /workspace/README.md",
        description: "List the checkout",
      }),
      replies.text("looked"),
    );
    const second = await stack.finishedTask(
      await comment("octo/gamma", newIssue, "@tether GAMMA-NEW-ASK look"),
    );
    expect(second).toMatchObject({
      status: "succeeded",
      repo_id: newId,
      resume_decision: "fresh",
      resume_reason: "no_prior_session",
      is_follow_up: false,
    });
    expect(second.session_id).not.toBe(first.session_id);
    const asked = agentRequests(m1);
    expect(sawText(asked, "GAMMA-NEW-ASK")).toBe(true);
    expect(sawText(asked, "GAMMA-OLD-ASK")).toBe(false); // no transcript of the old one
    // What the agent saw of its checkout: the new repository, none of the old one's files.
    const seen = toolResults(asked);
    expect(seen).toContain("gamma, the second");
    expect(seen).not.toContain("OLD-NOTE.txt");
    expect(seen).not.toContain("old-only.js");
    expect(seen).not.toContain("gamma, the first");
    // On disk: another directory; the old one's note is not in it.
    const newDir = String(second.work_dir);
    expect(newDir).not.toBe(oldDir);
    expect(fs.existsSync(path.join(newDir, "OLD-NOTE.txt"))).toBe(false);
    expect(fs.existsSync(path.join(newDir, "src/old-only.js"))).toBe(false);
    // Nothing of the old conversation is the new one's: no session, branch or transcript row.
    const { rows } = await db.pool.query(
      `SELECT (SELECT count(*) FROM sessions WHERE repo_id = $1)::int AS sessions,
              (SELECT count(*) FROM session_transcripts WHERE repo_id = $1 AND session_id = $2)::int AS transcripts`,
      [newId, first.session_id],
    );
    expect(rows[0]).toEqual({ sessions: 1, transcripts: 0 });
  });
});
