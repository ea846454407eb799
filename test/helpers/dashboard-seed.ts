import type { Pool } from "../../src/db/pool.js";
import { seedTask, type Row } from "./seed.js";

/** A repository id for a name in SQL: a stable positive number, as GitHub gives each repository one. */
const REPO_ID_OF = (name: string) => `((hashtext(${name})::bigint & 2147483647) + 1000)`;

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
    `INSERT INTO runtimes (id, hostname, home_dir, cli_path, cli_version, can_resume, concurrency, running, started_at, heartbeat_at, sandbox)
     VALUES ('runner-a', 'host-a', '/home/a', '/usr/bin/claude', '2.1.197', true, 4, 1, $1, $2, 'bwrap 0.8.0'),
            ('runner-b', 'host-b', '/home/b', '/usr/bin/claude', '2.1.180', false, 2, 0, $1, $3, 'unavailable: bwrap: No permissions to create new namespace')`,
    [ago(3 * DAY), ago(10_000), ago(5 * MIN)],
  );
  // CI loops (#29): one that went green, one that stopped.
  await pool.query(
    `INSERT INTO ci_loops (repo_id, issue_number, agent, pull_number, state, attempts, started_at)
     VALUES (1, 3, 'tether', 4, 'green', 1, $1), (1, 5, 'tether', 6, 'stopped', 3, $1)`,
    [ago(2 * HOUR)],
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
    // GitHub refused its answer: waiting in the answer outbox
    answer_pending: true,
    answer_body: "the answer",
    answer_next_at: t,
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

/**
 * A month of plausible traffic relative to `now` (for the browser test and screenshots):
 * `n` turns over `days` days across a handful of repositories and agents, 70 % follow-ups of
 * which most resume, every fallback reason represented, three runners, a short queue, MCP tool
 * calls on three servers (one never called) before the last day.
 */
export async function seedRealisticTasks(
  pool: Pool,
  opts: { now: Date; n?: number; days?: number },
): Promise<void> {
  const n = opts.n ?? 1500;
  const days = opts.days ?? 30;
  const now = opts.now;
  await pool.query(
    `INSERT INTO runtimes (id, hostname, home_dir, cli_path, cli_version, can_resume, concurrency, running, started_at, heartbeat_at, sandbox)
     VALUES ('runner-eu-1', 'ci-eu-1.internal', '/home/tether', '/usr/bin/claude', '2.1.197', true, 4, 2, $1::timestamptz - interval '3 days', $1::timestamptz - interval '8 seconds', 'bwrap 0.8.0'),
            ('runner-eu-2', 'ci-eu-2.internal', '/home/tether', '/usr/bin/claude', '2.1.197', true, 4, 1, $1::timestamptz - interval '3 days', $1::timestamptz - interval '21 seconds', 'bwrap 0.8.0'),
            ('runner-us-1', 'ci-us-1.internal', '/home/tether', '/usr/bin/claude', '2.1.180', true, 2, 0, $1::timestamptz - interval '9 days', $1::timestamptz - interval '47 minutes', 'off')`,
    [now],
  );
  await pool.query(
    `INSERT INTO tasks (repo, repo_id, installation_id, issue_number, agent, status, trigger_comment_id,
                        trigger_author, trigger_url, trigger_body, runtime_id, session_id,
                        resume_decision, resume_reason, is_follow_up, outcome, model,
                        input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,
                        cost_usd, num_turns, duration_ms, answer_comment_id, created_at,
                        finished_at, github_requests, mcp_tool_calls)
     SELECT repo, ${REPO_ID_OF("repo")}, 1, issue, agent, status, 900000 + g, author,
            'https://github.com/' || repo || '/issues/' || issue || '#issuecomment-' || (900000 + g),
            '@tether please look', CASE WHEN g % 3 = 0 THEN 'runner-eu-2' ELSE 'runner-eu-1' END,
            md5(repo || issue || agent)::uuid::text,
            CASE WHEN resumed THEN 'resume' ELSE 'fresh' END, reason, follow_up,
            outcome, 'claude-sonnet-4-5',
            CASE WHEN resumed THEN 1500 + (r4 * 3000)::int ELSE 12000 + (r4 * 9000)::int END,
            400 + (r4 * 1600)::int,
            CASE WHEN resumed THEN 35000 + (r4 * 50000)::int ELSE (r4 * 4000)::int END,
            CASE WHEN resumed THEN 800 + (r4 * 2500)::int ELSE 30000 + (r4 * 30000)::int END,
            round((CASE WHEN resumed THEN 0.02 + r4 * 0.05 ELSE 0.18 + r4 * 0.22 END)::numeric, 6),
            1 + (r4 * 6)::int, 8000 + (r4 * 90000)::int, 800000 + g, created, created + interval '90 seconds',
            CASE WHEN follow_up THEN 6 + g % 3 ELSE 5 + g % 2 END,
            -- MCP servers (#39) from a day ago back: the last 24 h show none.
            CASE WHEN created >= $1::timestamptz - interval '1 day' THEN NULL
                 WHEN g % 4 = 0 THEN jsonb_build_object('sentry', 1 + g % 3, 'docs', (g / 4) % 2)
                 WHEN g % 4 = 1 THEN '{"linear": 0}'::jsonb END
       FROM (SELECT *, follow_up AND r2 < 0.82 AS resumed,
                    CASE WHEN NOT follow_up THEN 'no_prior_session'
                         WHEN r2 < 0.82 THEN 'resumed'
                         ELSE (ARRAY['forced_fresh', 'runtime_mismatch', 'workdir_changed', 'poisoned',
                                     'history_edited', 'expired', 'context_budget', 'resume_rejected',
                                     'cli_cannot_resume', 'resume_disabled'])[1 + floor((r2 - 0.82) / 0.18 * 10)::int]
                    END AS reason,
                    CASE WHEN r3 < 0.94 THEN 'success' WHEN r3 < 0.97 THEN 'failed'
                         WHEN r3 < 0.985 THEN 'timed_out' ELSE 'cancelled' END AS outcome,
                    CASE WHEN r3 < 0.94 THEN 'succeeded' WHEN r3 < 0.985 THEN 'failed'
                         ELSE 'cancelled' END AS status
               FROM (SELECT g,
                            (ARRAY['acme/api', 'acme/web', 'acme/infra', 'acme/mobile', 'acme/docs',
                                   'acme/billing', 'acme/search', 'acme/design-system'])[1 + (g * 7) % 8] AS repo,
                            (ARRAY['tether', 'tether', 'tether', 'reviewer', 'docs'])[1 + g % 5] AS agent,
                            (ARRAY['mona', 'hubot', 'octocat', 'lisa-ops', 'j-doe'])[1 + (g * 3) % 5] AS author,
                            1 + (g * 13) % 120 AS issue,
                            ((g * 37) % 100) < 70 AS follow_up,
                            ((g * 53) % 1000) / 1000.0 AS r2, ((g * 71) % 1000) / 1000.0 AS r3,
                            ((g * 29) % 1000) / 1000.0 AS r4,
                            $1::timestamptz - make_interval(secs => power(($2 - g)::float8 / $2, 1.6) * $3 * 86400 + 30) AS created
                       FROM generate_series(1, $2::int) g) base) s`,
    [now, n, days],
  );
  // A running turn and a short queue.
  await pool.query(
    `INSERT INTO tasks (repo, repo_id, installation_id, issue_number, agent, status, trigger_author, trigger_url,
                        trigger_body, runtime_id, session_id, resume_decision, resume_reason,
                        is_follow_up, locked_by, locked_at, heartbeat_at, created_at, started_at)
     VALUES ('acme/api', ${REPO_ID_OF("'acme/api'")}, 1, 4242, 'tether', 'running', 'mona',
             'https://github.com/acme/api/issues/4242#issuecomment-1', '@tether continue',
             'runner-eu-1', '6f1d9a2e-3c4b-4e8f-9a7d-2b1c0e5f8a93', 'resume', 'resumed', true,
             'runner-eu-1:0', $1, $1, $1::timestamptz - interval '2 minutes', $1::timestamptz - interval '100 seconds'),
            ('acme/web', ${REPO_ID_OF("'acme/web'")}, 1, 977, 'reviewer', 'queued', 'hubot',
             'https://github.com/acme/web/pull/977#issuecomment-2', '@tether review', NULL, NULL, NULL, NULL,
             NULL, NULL, NULL, NULL, $1::timestamptz - interval '74 seconds', NULL),
            ('acme/docs', ${REPO_ID_OF("'acme/docs'")}, 1, 12, 'docs', 'queued', 'j-doe',
             'https://github.com/acme/docs/issues/12#issuecomment-3', '@tether docs', NULL, NULL, NULL, NULL,
             NULL, NULL, NULL, NULL, $1::timestamptz - interval '20 seconds', NULL)`,
    [now],
  );
  // Turns a spend limit kept from running: not turns, counted beside them.
  await pool.query(
    `INSERT INTO tasks (repo, repo_id, installation_id, issue_number, agent, status, outcome, failure_reason,
                        trigger_author, trigger_url, trigger_body, created_at, finished_at)
     SELECT 'acme/billing', ${REPO_ID_OF("'acme/billing'")}, 1, 88, 'tether', 'cancelled', 'limit_refused',
            'not run: conversation: spent $5.1200 of $5', 'mona',
            'https://github.com/acme/billing/issues/88#issuecomment-' || (700 + g), '@tether again',
            $1::timestamptz - make_interval(hours => g), $1::timestamptz - make_interval(hours => g)
       FROM generate_series(1, 3) g`,
    [now],
  );
}

/**
 * Three schedules for the dashboard's list (#41): one that ran (its last turn `lastTaskId`), one
 * that never ran, and a `title:` schedule whose issue its first run will open. Next due first:
 * widgets (in 25 minutes), gadgets (in 2 hours), reports (tomorrow).
 */
export async function seedSchedules(
  pool: Pool,
  opts: { now: Date; lastTaskId: number },
): Promise<void> {
  const at = (ms: number) => new Date(opts.now.getTime() + ms);
  await pool.query(
    `INSERT INTO schedules (repo_id, installation_id, repo, schedule_key, position, cron, timezone,
                           agent, issue_number, title, request, next_run_at, last_run_at, last_task_id)
     VALUES (101, 1, 'octo/widgets', 'tether#42', 0, '0 * * * *', 'UTC', 'tether', 42, NULL,
             'Triage the new issues.', $1, $2, $3),
            (102, 1, 'octo/gadgets', 'reviewer#7', 0, '0 9 * * 1', 'Europe/Paris', 'reviewer', 7,
             NULL, 'Review the week.', $4, NULL, NULL),
            (103, 1, 'octo/reports', 'tether:Daily report', 0, '30 6 * * *', 'UTC', 'tether', NULL,
             'Daily report', 'Report on yesterday.', $5, NULL, NULL)`,
    [at(25 * MIN), at(-35 * MIN), opts.lastTaskId, at(2 * HOUR), at(DAY)],
  );
}
