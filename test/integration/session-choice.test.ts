/**
 * `/resume <id-prefix>` and `/sessions` against a real Postgres: which session is the key's
 * prior one (src/sql/sessions.ts priorSession) before and after a person chooses one, and what
 * settles the choice.
 */
import { describe, expect, it } from "vitest";
import { chooseSession } from "../../src/intake/session-commands.js";
import { issueSessions, priorSession, upsertSession } from "../../src/sql/sessions.js";
import { createTestDatabase } from "../helpers/db.js";
import { readTask, seedTask } from "../helpers/seed.js";
import { repoIdOf } from "../helpers/seed.js";
import type { TaskKey } from "../../src/core/task.js";

const db = await createTestDatabase();
let issue = 0;

/** A finished turn of the key in session `sessionId`, started and finished at `at` seconds ago. */
async function turn(
  key: TaskKey,
  sessionId: string | null,
  secondsAgo: number,
  extra: Record<string, unknown> = {},
) {
  if (sessionId)
    await upsertSession(db.pool, {
      cli: "claude",
      ...key,
      sessionId,
      runtimeId: "rt",
      workDir: "/w",
      model: "claude-sonnet-4-5",
      historyEpoch: 0,
    });
  const at = new Date(Date.now() - secondsAgo * 1000);
  return seedTask(db.pool, {
    repo: key.repo,
    issue_number: key.issueNumber,
    agent: key.agent,
    status: "succeeded",
    session_id: sessionId,
    started_at: at,
    finished_at: at,
    cost_usd: 0.5,
    model: "claude-sonnet-4-5",
    ...extra,
  });
}

describe("/resume <id-prefix>", () => {
  it("makes the chosen session the prior one until a turn runs in a session after it", async () => {
    const key = {
      repoId: repoIdOf("octo/widgets"),
      repo: "octo/widgets",
      issueNumber: ++issue,
      agent: "tether",
    };
    await turn(key, "aaaa1111-0000", 30);
    await turn(key, "bbbb2222-0000", 20, { force_fresh: true });
    expect((await priorSession(db.pool, key))?.sessionId).toBe("bbbb2222-0000");

    const chosen = await chooseSession(db.pool, key, "@tether", "aaaa11");
    expect(chosen.ok).toBe(true);
    expect((await priorSession(db.pool, key))?.sessionId).toBe("aaaa1111-0000");

    // A turn that never reached a session (a spend refusal) leaves the choice standing.
    await turn(key, null, 0, { status: "cancelled", outcome: "limit_refused" });
    expect((await priorSession(db.pool, key))?.sessionId).toBe("aaaa1111-0000");
    // Another agent's turns on the issue do not touch it.
    await turn({ ...key, agent: "reviewer" }, "cccc3333-0000", 0);
    expect((await priorSession(db.pool, key))?.sessionId).toBe("aaaa1111-0000");

    // A /fresh turn after the choice settles it: its session is the prior one from then on.
    await db.pool.query(
      `INSERT INTO sessions (session_id, repo, issue_number, agent, repo_id)
       VALUES ('dddd4444-0000', $1, $2, $3, $4)`,
      [key.repo, key.issueNumber, key.agent, key.repoId],
    );
    await seedTask(db.pool, {
      repo: key.repo,
      issue_number: key.issueNumber,
      agent: key.agent,
      status: "succeeded",
      session_id: "dddd4444-0000",
      started_at: new Date(Date.now() + 1000), // after the choice, whatever the clocks' grain
      finished_at: new Date(Date.now() + 1000),
    });
    expect((await priorSession(db.pool, key))?.sessionId).toBe("dddd4444-0000");
  });

  it("undoes a /fresh that is still queued: the choice is the later word", async () => {
    const key = {
      repoId: repoIdOf("octo/widgets"),
      repo: "octo/widgets",
      issueNumber: ++issue,
      agent: "tether",
    };
    await turn(key, "aaaa9999-0000", 30);
    const queued = await seedTask(db.pool, {
      repo: key.repo,
      issue_number: key.issueNumber,
      agent: key.agent,
      status: "queued",
      force_fresh: true,
    });
    const chosen = await chooseSession(db.pool, key, "@tether", "aaaa9999");
    expect(chosen.reply).toContain("instead of the fresh session a queued `/fresh` asked for");
    expect((await readTask(db.pool, queued.id)).force_fresh).toBe(false);
  });

  it("refuses a prefix that names none, several, or a broken session, and changes nothing", async () => {
    const key = {
      repoId: repoIdOf("octo/widgets"),
      repo: "octo/widgets",
      issueNumber: ++issue,
      agent: "tether",
    };
    await turn(key, "abcd0001-0000", 30);
    await turn(key, "abcd0002-0000", 20);
    await turn(key, "ef012345-0000", 10);
    await db.pool.query(
      `UPDATE sessions SET state = 'poisoned' WHERE session_id = 'ef012345-0000'`,
    );
    await turn(key, "f0000000-0000", 5);
    const cases: Array<[string, RegExp]> = [
      ["9999", /no session of this agent on this issue starts with `9999`/],
      ["abcd", /2 sessions start with `abcd`/],
      ["ef01", /is poisoned/],
      ["ab", /at least 4/],
      ["ab%d", /at least 4/],
      ["abc_", /no session/], // `_` is no wildcard
    ];
    for (const [prefix, reply] of cases) {
      const r = await chooseSession(db.pool, key, "@tether", prefix);
      expect(r.ok, prefix).toBe(false);
      expect(r.reply, prefix).toMatch(reply);
    }
    expect((await priorSession(db.pool, key))?.sessionId).toBe("f0000000-0000");
    // Another key's session is not this key's to choose.
    const other = await chooseSession(db.pool, { ...key, agent: "reviewer" }, "@reviewer", "f000");
    expect(other.ok).toBe(false);
  });
});

describe("/sessions", () => {
  it("lists each agent's sessions with turns, state, models and cost", async () => {
    const key = {
      repoId: repoIdOf("octo/widgets"),
      repo: "octo/widgets",
      issueNumber: ++issue,
      agent: "tether",
    };
    await turn(key, "11111111-aaaa", 30);
    await turn(key, "11111111-aaaa", 25, {
      model: "claude-opus-4-1",
      requested_model: "claude-opus-4-1",
    });
    await turn(key, "22222222-bbbb", 20);
    await turn({ ...key, agent: "reviewer" }, "33333333-cccc", 10);
    const list = await issueSessions(db.pool, key.repoId, key.issueNumber, ["tether", "reviewer"]);
    expect(list.map((s) => [s.agent, s.sessionId, s.turns, s.models, s.costUsd])).toEqual([
      ["tether", "22222222-bbbb", 1, ["claude-sonnet-4-5"], 0.5],
      ["tether", "11111111-aaaa", 2, ["claude-sonnet-4-5", "claude-opus-4-1"], 1],
      ["reviewer", "33333333-cccc", 1, ["claude-sonnet-4-5"], 0.5],
    ]);
  });
});
