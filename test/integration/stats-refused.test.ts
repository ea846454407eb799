/**
 * The dashboard's figures for tasks a spend limit refused: counted per repository and agent
 * beside the spend, in the window by their created_at, and never as turns.
 */
import { STATS_CLIS } from "../../src/cli-registry.js";
import { describe, expect, it } from "vitest";
import { readStats } from "../../src/sql/stats/read.js";
import { createTestDatabase } from "../helpers/db.js";
import { seedTask } from "../helpers/seed.js";

const db = await createTestDatabase();
const NOW = new Date("2026-03-10T12:34:56.000Z");
const ago = (h: number) => new Date(NOW.getTime() - h * 3_600_000);

const turn = (repo: string, agent: string, createdAt: Date, costUsd: number) =>
  seedTask(db.pool, {
    repo,
    agent,
    created_at: createdAt,
    status: "succeeded",
    outcome: "success",
    resume_decision: "fresh",
    resume_reason: "no_prior_session",
    is_follow_up: false,
    cost_usd: costUsd,
    finished_at: createdAt,
  });
const refused = (repo: string, agent: string, createdAt: Date) =>
  seedTask(db.pool, {
    repo,
    agent,
    created_at: createdAt,
    status: "cancelled",
    outcome: "limit_refused",
    failure_reason: "not run: conversation: spent $1.0000 of $1",
    finished_at: createdAt,
  });

describe("refused tasks on the dashboard", () => {
  it("counts them per repository and agent and in total, not as turns; a pair with only refusals still has its row", async () => {
    await turn("octo/widgets", "claude", ago(2), 0.5);
    await turn("octo/widgets", "claude", ago(1), 0.25);
    await refused("octo/widgets", "claude", ago(1));
    await refused("octo/widgets", "claude", ago(0.5));
    await refused("octo/gadgets", "review", ago(3));
    await refused("octo/widgets", "claude", ago(48)); // outside 24 h

    const s = await readStats(db.pool, { range: "24h", now: NOW, clis: STATS_CLIS });
    expect(s.totals).toMatchObject({ turns: 2, costUsd: 0.75, refused: 3 });
    expect(s.outcomes).not.toHaveProperty("limit_refused");
    expect(s.outcomes.success).toBe(2);
    expect(s.repos.map((r) => [r.repo, r.agent, r.turns, r.costUsd, r.refused])).toEqual([
      ["octo/widgets", "claude", 2, 0.75, 2],
      ["octo/gadgets", "review", 0, 0, 1],
    ]);
    expect(s.reposTotal).toBe(2);

    const week = await readStats(db.pool, { range: "7d", now: NOW, clis: STATS_CLIS });
    expect(week.totals.refused).toBe(4);
    expect(week.repos.find((r) => r.repo === "octo/widgets")?.refused).toBe(3);
  });
});
