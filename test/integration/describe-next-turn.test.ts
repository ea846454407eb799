import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, parseRepoConfig } from "../../src/config/repo-config.js";
import { describeNextTurn } from "../../src/runner/describe-next-turn.js";
import { upsertSession } from "../../src/sql/sessions.js";
import { createTestDatabase } from "../helpers/db.js";
import { seedTask } from "../helpers/seed.js";

const db = await createTestDatabase();
const pool = db.pool;
const now = new Date();
const status = (issueNumber: number, agents = ["tether"], config = DEFAULT_CONFIG) =>
  describeNextTurn({ pool, repo: "octo/widgets", issueNumber, agents, config, now });

describe("/status with the runner's next-turn decision", () => {
  it("says a first turn starts fresh", async () => {
    expect(await status(1)).toMatch(/Next turn: \*\*fresh session\*\* \(`no_prior_session`/);
  });

  it("shows the key's branch and pull request, or where changes will go", async () => {
    expect(await status(41)).toContain(
      "- Changes: none published yet; they will go to branch `tether/41-tether` with a pull request.",
    );
    await pool.query(
      `INSERT INTO conversation_branches (repo, issue_number, agent, branch, base_branch, head_sha, pull_number, commits)
       VALUES ('octo/widgets', 41, 'tether', 'tether/41-tether', 'main', $1, 42, 3)`,
      ["c".repeat(40)],
    );
    expect(await status(41)).toContain(
      "- Changes: branch `tether/41-tether` (3 commits pushed, last `ccccccc`), pull request #42.",
    );
    const plan = parseRepoConfig({ agents: { tether: { permissionMode: "plan" } } });
    if (!plan.ok) throw new Error("config");
    expect(await status(43, ["tether"], plan.config)).toContain(
      "- Changes: not published (the agent plans only).",
    );
  });

  it("says a follow-up resumes the key's session, naming it and its runtime", async () => {
    await upsertSession(pool, {
      repo: "octo/widgets",
      issueNumber: 2,
      agent: "tether",
      sessionId: "sess-2",
      runtimeId: "rt-a",
      workDir: "/w/2",
      model: "m",
      historyEpoch: 0,
    });
    await seedTask(pool, {
      issue_number: 2,
      status: "succeeded",
      session_id: "sess-2",
      finished_at: now,
    });
    const text = await status(2);
    expect(text).toContain("Next turn: **resumes** session `sess-2` on runtime `rt-a` (`resumed`)");
    expect(text).toContain("Last session: `sess-2` (active)");
  });

  it("gives the reason when the next turn cannot resume: history edited, /fresh queued, resume disabled", async () => {
    await upsertSession(pool, {
      repo: "octo/widgets",
      issueNumber: 3,
      agent: "tether",
      sessionId: "sess-3",
      runtimeId: "rt-a",
      workDir: "/w/3",
      model: "m",
      historyEpoch: 0,
    });
    await seedTask(pool, {
      issue_number: 3,
      status: "succeeded",
      session_id: "sess-3",
      finished_at: now,
    });
    await pool.query(
      `INSERT INTO history_epochs (repo, issue_number, agent, epoch) VALUES ('octo/widgets', 3, 'tether', 1)`,
    );
    expect(await status(3)).toMatch(/fresh session\*\* \(`history_edited`/);

    await upsertSession(pool, {
      repo: "octo/widgets",
      issueNumber: 4,
      agent: "tether",
      sessionId: "sess-4",
      runtimeId: "rt-a",
      workDir: "/w/4",
      model: "m",
      historyEpoch: 0,
    });
    await seedTask(pool, {
      issue_number: 4,
      status: "succeeded",
      session_id: "sess-4",
      finished_at: now,
    });
    await seedTask(pool, { issue_number: 4, status: "queued", force_fresh: true });
    expect(await status(4)).toMatch(
      /Queued: .*\(fresh session requested\)[\s\S]*fresh session\*\* \(`forced_fresh`/,
    );

    const off = parseRepoConfig({ resume: { enabled: false } });
    if (!off.ok) throw new Error("config");
    expect(await status(2, ["tether"], off.config)).toMatch(
      /fresh session\*\* \(`resume_disabled`/,
    );
  });

  it("covers every agent with tasks on the issue, not only the one addressed", async () => {
    await seedTask(pool, { issue_number: 5, agent: "reviewer", status: "queued" });
    const text = await status(5, ["tether"]);
    expect(text).toContain("`@tether` on this issue");
    expect(text).toContain("`@reviewer` on this issue");
  });
});
