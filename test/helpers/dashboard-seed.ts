import type { Pool } from "../../src/db/pool.js";
import { seedTask, type Row } from "./seed.js";

/** The clock the seeded figures are exact against. */
export const NOW = new Date("2026-03-10T12:34:56.000Z");
const ago = (ms: number): Date => new Date(NOW.getTime() - ms);
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

const usage = (
  input: number,
  output: number,
  cacheRead: number,
  cacheCreation: number,
  cost: number,
  duration: number,
): Row => ({
  input_tokens: input,
  output_tokens: output,
  cache_read_tokens: cacheRead,
  cache_creation_tokens: cacheCreation,
  cost_usd: cost,
  duration_ms: duration,
  num_turns: 1,
  model: "claude-sonnet-4-5",
});

const turn = (
  createdAt: Date,
  decision: "resume" | "fresh",
  reason: string,
  followUp: boolean,
  extra: Row,
): Row => ({
  created_at: createdAt,
  started_at: new Date(createdAt.getTime() + 1000),
  resume_decision: decision,
  resume_reason: reason,
  is_follow_up: followUp,
  runtime_id: "runner-a",
  session_id: `sess-${createdAt.getTime()}`,
  ...extra,
});

const done = (createdAt: Date, outcome: string, status = "succeeded"): Row => ({
  status,
  outcome,
  finished_at: new Date(createdAt.getTime() + 60_000),
});

/**
 * The fixture every stats test counts against (see test/integration/stats.test.ts for the
 * figures it must give). Inside the last 24 h: 7 turns, 6 follow-ups, 3 resumed.
 */
export async function seedDashboardFixture(pool: Pool): Promise<Row[]> {
  await pool.query(
    `INSERT INTO runtimes (id, hostname, home_dir, claude_path, cli_version, can_resume, concurrency, running, started_at, heartbeat_at)
     VALUES ('runner-a', 'host-a', '/home/a', '/usr/bin/claude', '2.1.197', true, 4, 1, $1, $2),
            ('runner-b', 'host-b', '/home/b', '/usr/bin/claude', '2.1.180', false, 2, 0, $1, $3)`,
    [ago(3 * DAY), ago(10_000), ago(5 * MIN)],
  );
  const w = { repo: "octo/widgets", agent: "tether" };
  const g = { repo: "octo/gadgets", agent: "reviewer", issue_number: 7 };
  const rows: Row[] = [];
  const add = async (r: Row) => rows.push(await seedTask(pool, r));
  let t = ago(5 * HOUR);
  await add({
    ...w,
    ...turn(t, "fresh", "no_prior_session", false, usage(20000, 1000, 0, 50000, 0.3, 60000)),
    ...done(t, "success"),
    answer_comment_id: 555,
  });
  t = ago(4 * HOUR);
  await add({
    ...w,
    ...turn(t, "resume", "resumed", true, usage(2000, 800, 60000, 3000, 0.05, 30000)),
    ...done(t, "success"),
  });
  t = ago(3 * HOUR);
  await add({
    ...w,
    ...turn(t, "resume", "resumed", true, usage(4000, 1200, 70000, 1000, 0.07, 50000)),
    ...done(t, "success"),
  });
  t = ago(2 * HOUR);
  await add({
    ...w,
    ...turn(t, "fresh", "forced_fresh", true, usage(18000, 900, 0, 60000, 0.33, 70000)),
    ...done(t, "success"),
  });
  t = ago(1 * HOUR);
  await add({
    ...g,
    ...turn(t, "fresh", "runtime_mismatch", true, usage(10000, 100, 0, 20000, 0.15, 10000)),
    ...done(t, "failed", "failed"),
  });
  t = ago(10 * MIN);
  await add({
    ...g,
    ...turn(t, "resume", "resumed", true, {}),
    status: "running",
    locked_by: "runner-a:1",
    locked_at: t,
    heartbeat_at: ago(5_000),
  });
  t = ago(30 * MIN);
  await add({
    ...g,
    issue_number: 8,
    ...turn(t, "fresh", "resume_rejected", true, usage(16000, 500, 0, 40000, 0.25, 20000)),
    ...done(t, "success"),
  });
  // Two days ago: in the 7 and 30 day ranges only.
  t = ago(2 * DAY);
  await add({
    ...w,
    ...turn(t, "resume", "resumed", true, usage(3000, 700, 50000, 2000, 0.04, 25000)),
    ...done(t, "success"),
  });
  // Forty days ago: in no range.
  t = ago(40 * DAY);
  await add({
    ...w,
    ...turn(t, "fresh", "expired", true, usage(9000, 100, 0, 9000, 0.1, 9000)),
    ...done(t, "success"),
  });
  // Not turns: two queued (the queue), one cancelled before it ran.
  await add({ ...w, issue_number: 2, created_at: ago(15 * MIN) });
  await add({ ...w, issue_number: 3, created_at: ago(5 * MIN) });
  await add({ ...w, issue_number: 4, created_at: ago(20 * MIN), status: "cancelled" });
  return rows;
}
