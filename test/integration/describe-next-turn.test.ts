import { AGENT_CLIS } from "../../src/cli-registry.js";
import { describe, expect, it } from "vitest";
import { defaultConfig, parseRepoConfig } from "../../src/config/repo-config.js";
import { describeNextTurn } from "../../src/runner/render/describe-next-turn.js";
import { upsertSession } from "../../src/sql/sessions.js";
import { resentComments, rewindFacts } from "../../src/sql/history.js";
import { postgresTurnHistory } from "../../src/sql/turn-store.js";
import { createTestDatabase } from "../helpers/db.js";
import { seedTask } from "../helpers/seed.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
const pool = db.pool;
const now = new Date();
const status = (issueNumber: number, agents = ["tether"], config = defaultConfig(AGENT_CLIS)) =>
  describeNextTurn(postgresTurnHistory(pool))({
    pool,
    repoId: repoIdOf("octo/widgets"),
    repo: "octo/widgets",
    issueNumber,
    agents,
    config,
    now,
  });

describe("/status with the runner's next-turn decision", () => {
  it("says a first turn starts fresh", async () => {
    expect(await status(1)).toMatch(/Next turn: \*\*fresh session\*\* \(`no_prior_session`/);
  });

  it("shows the key's branch and pull request, or where changes will go", async () => {
    expect(await status(41)).toContain(
      "- Changes: none published yet; they will go to branch `tether/41-tether` with a pull request.",
    );
    await pool.query(
      `INSERT INTO conversation_branches (repo, repo_id, issue_number, agent, branch, base_branch, head_sha, pull_number, commits)
       VALUES ('octo/widgets', 1, 41, 'tether', 'tether/41-tether', 'main', $1, 42, 3)`,
      ["c".repeat(40)],
    );
    expect(await status(41)).toContain(
      "- Changes: branch `tether/41-tether` (3 commits pushed, last `ccccccc`), pull request #42.",
    );
    const plan = parseRepoConfig({ agents: { tether: { permissionMode: "plan" } } }, AGENT_CLIS);
    if (!plan.ok) throw new Error("config");
    expect(await status(43, ["tether"], plan.config)).toContain(
      "- Changes: not published (the agent plans only).",
    );
  });

  it("says a follow-up resumes the key's session, naming it and its runtime", async () => {
    await upsertSession(pool, {
      repoId: repoIdOf("octo/widgets"),
      cli: "claude",
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
    expect(text).toMatch(/\(`resumed`\) on `claude-sonnet-4-5`\./); // the turn's model
    expect(text).toContain("Last session: `sess-2` (active)");
  });

  it("never posts a whole session id in the thread, only its first eight characters (#28)", async () => {
    const sessionId = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
    await upsertSession(pool, {
      repoId: repoIdOf("octo/widgets"),
      cli: "claude",
      repo: "octo/widgets",
      issueNumber: 28,
      agent: "tether",
      sessionId,
      runtimeId: "rt-a",
      workDir: "/w/28",
      model: "m",
      historyEpoch: 0,
    });
    await pool.query(
      "UPDATE sessions SET context_tokens = 1000, context_window = 200000 WHERE session_id = $1",
      [sessionId],
    );
    await seedTask(pool, {
      issue_number: 28,
      status: "succeeded",
      session_id: sessionId,
      finished_at: now,
    });
    const text = await status(28);
    expect(text).toContain("Next turn: **resumes** session `7c9e6679`");
    expect(text).toContain("Last session: `7c9e6679` (active)");
    expect(text).not.toContain(sessionId.slice(0, 9));
  });

  it("a session over the context budget: compacted then resumed (Claude), fresh with compact off", async () => {
    await upsertSession(pool, {
      repoId: repoIdOf("octo/widgets"),
      cli: "claude",
      repo: "octo/widgets",
      issueNumber: 20,
      agent: "tether",
      sessionId: "sess-20",
      runtimeId: "rt-a",
      workDir: "/w/20",
      model: "m",
      historyEpoch: 0,
    });
    await pool.query(
      "UPDATE sessions SET context_tokens = 190000, context_window = 200000 WHERE session_id = 'sess-20'",
    );
    await seedTask(pool, {
      issue_number: 20,
      status: "succeeded",
      session_id: "sess-20",
      finished_at: now,
    });
    expect(await status(20)).toContain(
      "Next turn: **compacts, then resumes** session `sess-20` on runtime `rt-a` (`compacted`)",
    );
    const off = parseRepoConfig({ resume: { compact: false } }, AGENT_CLIS);
    if (!off.ok) throw new Error("config");
    expect(await status(20, ["tether"], off.config)).toMatch(
      /Next turn: \*\*fresh session\*\* \(`context_budget`/,
    );
  });

  it("says the next turn rewinds a session whose read comment was edited (Claude), and starts fresh on Codex", async () => {
    await upsertSession(pool, {
      repoId: repoIdOf("octo/widgets"),
      cli: "claude",
      repo: "octo/widgets",
      issueNumber: 50,
      agent: "tether",
      sessionId: "sess-50",
      runtimeId: "rt-a",
      workDir: "/w/50",
      model: "m",
      historyEpoch: 0,
    });
    const turns = [];
    for (const [i, entry] of [null, "m-b", "m-c"].entries()) {
      const t = await seedTask(pool, {
        issue_number: 50,
        status: "succeeded",
        session_id: "sess-50",
        session_entry: entry,
        started_at: new Date(now.getTime() - (10 - i) * 60_000),
        finished_at: new Date(now.getTime() - (9 - i) * 60_000),
      });
      await pool.query(
        `INSERT INTO task_comments (source, agent, task_id, comment_id, author, url, body)
         VALUES ($1, 'tether', $2, $3, 'alice', $4, $5)`,
        [`comment:50${i}`, t.id, 500 + i, `u-50${i}`, `asked ${i}`],
      );
      turns.push(t);
    }
    await pool.query(
      `INSERT INTO history_epochs (repo_id, issue_number, agent, epoch) VALUES (1, 50, 'tether', 1)`,
    );
    await pool.query(
      `INSERT INTO history_edits (repo_id, issue_number, agent, epoch, source, deleted, body)
       VALUES (1, 50, 'tether', 1, 'comment:501', false, 'asked 1, edited')`,
    );
    const key = {
      repoId: repoIdOf("octo/widgets"),
      repo: "octo/widgets",
      issueNumber: 50,
      agent: "tether",
    };
    expect(await rewindFacts(pool, key, "sess-50", 0, 1)).toEqual({
      turns: turns.map((t, i) => ({
        taskId: Number(t.id),
        entry: [null, "m-b", "m-c"][i],
        sources: [`comment:50${i}`],
        compacted: false,
        rewoundFrom: null,
      })),
      edits: [{ epoch: 1, source: "comment:501", deleted: false }],
    });
    // What the rewound turn sends again: the edited text, then the comment after it.
    expect(
      (await resentComments(pool, key, ["comment:501", "comment:502"])).map((c) => c.body),
    ).toEqual(["asked 1, edited", "asked 2"]);
    expect(await status(50)).toContain(
      "Next turn: **rewinds, then resumes** session `sess-50` on runtime `rt-a` (`rewound`)",
    );
    const codex = parseRepoConfig({ agents: { tether: { cli: "codex" } } }, AGENT_CLIS);
    if (!codex.ok) throw new Error("config");
    // (A Claude session on a Codex agent is another CLI's: the first guard names that.)
    await pool.query("UPDATE sessions SET cli = 'codex' WHERE session_id = 'sess-50'");
    expect(await status(50, ["tether"], codex.config)).toMatch(
      /fresh session\*\* \(`history_edited`/,
    );
    // A deletion: the comment is not sent again.
    await pool.query(
      `INSERT INTO history_edits (repo_id, issue_number, agent, epoch, source, deleted, body)
       VALUES (1, 50, 'tether', 2, 'comment:502', true, NULL)`,
    );
    expect(
      (await resentComments(pool, key, ["comment:501", "comment:502"])).map((c) => c.body),
    ).toEqual(["asked 1, edited"]);
  });

  it("gives the reason when the next turn cannot resume: history edited, /fresh queued, resume disabled", async () => {
    await upsertSession(pool, {
      repoId: repoIdOf("octo/widgets"),
      cli: "claude",
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
      `INSERT INTO history_epochs (repo_id, issue_number, agent, epoch) VALUES (1, 3, 'tether', 1)`,
    );
    expect(await status(3)).toMatch(/fresh session\*\* \(`history_edited`/);

    await upsertSession(pool, {
      repoId: repoIdOf("octo/widgets"),
      cli: "claude",
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

    const off = parseRepoConfig({ resume: { enabled: false } }, AGENT_CLIS);
    if (!off.ok) throw new Error("config");
    expect(await status(2, ["tether"], off.config)).toMatch(
      /fresh session\*\* \(`resume_disabled`/,
    );
  });

  it("names the model of each turn: a queued /model's for that turn, the agent's otherwise (#30)", async () => {
    await seedTask(pool, {
      issue_number: 6,
      status: "succeeded",
      session_id: "sess-6",
      finished_at: now,
      model: "claude-sonnet-4-5",
    });
    await seedTask(pool, { issue_number: 6, status: "queued", requested_model: "claude-opus-4-1" });
    const text = await status(6);
    expect(text).toMatch(/Queued: .*, on `claude-opus-4-1` \(\/model, this turn only\)/);
    expect(text).toContain("Last session: `sess-6` (active), from task");
    expect(text).toMatch(/Last session: .*, on `claude-sonnet-4-5`/);
    expect(text).toMatch(/Next turn: .* on `claude-opus-4-1`\./);
  });

  it("names a queued CI turn's escalated model as the CI loop's, not a /model's (#30)", async () => {
    await seedTask(pool, {
      issue_number: 7,
      status: "queued",
      trigger: "ci",
      requested_model: "claude-opus-4-1",
    });
    const text = await status(7);
    expect(text).toMatch(
      /Queued: .*, on `claude-opus-4-1` \(`escalate`: after a failed CI attempt\)/,
    );
    expect(text).not.toContain("/model");
  });

  it("covers every agent with tasks on the issue, not only the one addressed", async () => {
    await seedTask(pool, { issue_number: 5, agent: "reviewer", status: "queued" });
    const text = await status(5, ["tether"]);
    expect(text).toContain("`@tether` on this issue");
    expect(text).toContain("`@reviewer` on this issue");
  });
});

describe("/status: the conversation's spend, from its recorded turns", () => {
  it("sums the key's turns (not another agent's, not a refused task), the month where limited, and estimates what resuming saved", async () => {
    const issue = 50;
    const turn = (over: Record<string, unknown>) =>
      seedTask(pool, {
        issue_number: issue,
        status: "succeeded",
        resume_decision: "fresh",
        resume_reason: "no_prior_session",
        finished_at: now,
        ...over,
      });
    await upsertSession(pool, {
      repoId: repoIdOf("octo/widgets"),
      cli: "claude",
      repo: "octo/widgets",
      issueNumber: issue,
      agent: "tether",
      sessionId: "sess-50",
      runtimeId: "rt-a",
      workDir: "/w/50",
      model: "m",
      historyEpoch: 0,
    });
    await pool.query(
      `UPDATE sessions SET context_tokens = 45000, context_window = 200000 WHERE session_id = 'sess-50'`,
    );
    await turn({ session_id: "sess-50", cost_usd: 0.108, prompt_bytes: 12_000, answer_bytes: 400 });
    await turn({
      session_id: "sess-50",
      resume_decision: "resume",
      resume_reason: "resumed",
      cost_usd: 0.009,
      prompt_bytes: 2_600,
      answer_bytes: 400,
      input_tokens: 3,
      cache_read_tokens: 29_000,
      cache_creation_tokens: 700,
    });
    // Not this conversation's: another agent, and a task a limit refused.
    await turn({ agent: "reviewer", session_id: "sess-r", cost_usd: 5 });
    await seedTask(pool, {
      issue_number: issue,
      status: "cancelled",
      outcome: "limit_refused",
      finished_at: now,
    });
    const config = parseRepoConfig(
      {
        agents: { tether: { conversationLimitUsd: 1 } },
        spend: { repositoryMonthlyUsd: 1000 },
      },
      AGENT_CLIS,
    );
    if (!config.ok) throw new Error("config");
    const text = await status(issue, ["tether"], config.config);
    expect(text).toContain(
      "- Spend: $0.1170 over 2 turns; the conversation limit is $1.00 ($0.8830 left).",
    );
    expect(text).toContain("- Context: 45k tokens of 200k (23%) in session `sess-50`");
    // 0.9 × (12,000 + 400) ÷ 4 = 2,790 saved; the resumed turn used 0.1 × 29,000 + 703 = 3,603.
    expect(text).toContain(
      "- Resuming saved an estimated 2,790 billed-equivalent input tokens over 1 turn (they used 3,603; started fresh, about 6,393).",
    );
    const month = await pool.query<{ sum: number }>(
      `SELECT sum(cost_usd) AS sum FROM tasks WHERE repo = 'octo/widgets'
          AND created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`,
    );
    const spent = month.rows[0]!.sum;
    expect(text).toContain(
      `- This repository: $${spent.toFixed(2)} of its $1000.00 for ${now.toLocaleString("en-GB", { month: "long", year: "numeric", timeZone: "UTC" })} (UTC).`,
    );
  });
});
