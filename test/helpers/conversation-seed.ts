import zlib from "node:zlib";
import type { Pool } from "../../src/db/pool.js";
import { recordPull, recordPush } from "../../src/sql/conversations.js";
import { chainDigest, EMPTY_DIGEST, writeTranscript } from "../../src/sql/transcripts.js";
import { seedTask, type Row } from "./seed.js";
import { repoIdOf } from "./seed.js";

/** The conversation the chain tests read: acme/chain#42, agent tether. */
export const CHAIN_KEY = {
  repoId: repoIdOf("acme/chain"),
  repo: "acme/chain",
  issueNumber: 42,
  agent: "tether",
};
export const POISONED = "poisoned-0a1b2c3d-4e5f";
export const ACTIVE = "active-9f8e7d6c-5b4a";
export const RETIRED = "retired-11223344-5566";
/** The poisoned session's transcript, as the CLI wrote it (stored in two gzip'd chunks). */
export const POISONED_TRANSCRIPT = Buffer.from(
  '{"type":"system","subtype":"init","session_id":"poisoned-0a1b2c3d-4e5f"}\n' +
    '{"type":"assistant","message":{"content":[{"type":"text","text":"secret repo contents"}]}}\n',
);

/**
 * One conversation with every kind of turn, and its neighbours: the same issue under another
 * agent and another issue of the repository (neither may count). All within the hour before
 * `now`, so /api/stats?range=24h holds them all. The (acme/chain, tether) repo row of
 * /api/stats is this conversation alone.
 */
export async function seedConversation(pool: Pool, now: Date): Promise<Row[]> {
  const at = (minAgo: number) => new Date(now.getTime() - minAgo * 60_000);
  const key = {
    repo: CHAIN_KEY.repo,
    issue_number: CHAIN_KEY.issueNumber,
    agent: CHAIN_KEY.agent,
  };
  const url = (c: number) => `https://github.com/acme/chain/issues/42#issuecomment-${c}`;
  const turn = (
    minAgo: number,
    r: {
      session: string;
      decision: "resume" | "fresh";
      reason: string;
      followUp: boolean;
      outcome: string;
      usage: [number, number, number, number, number, number];
      trigger?: string;
      extra?: Row;
    },
  ): Row => ({
    ...key,
    trigger: r.trigger ?? "comment",
    trigger_url: url(5000 + minAgo),
    created_at: at(minAgo),
    started_at: at(minAgo),
    finished_at: new Date(at(minAgo).getTime() + r.usage[5]),
    status: r.outcome === "success" ? "succeeded" : "failed",
    outcome: r.outcome,
    session_id: r.session,
    resume_decision: r.decision,
    resume_reason: r.reason,
    is_follow_up: r.followUp,
    model: "claude-sonnet-4-5",
    cli: "claude",
    cache_ttl: r.decision === "resume" ? "1h" : null,
    input_tokens: r.usage[0],
    output_tokens: r.usage[1],
    cache_read_tokens: r.usage[2],
    cache_creation_tokens: r.usage[3],
    cost_usd: r.usage[4],
    duration_ms: r.usage[5],
    num_turns: 1,
    ...r.extra,
  });
  const rows: Row[] = [];
  const add = async (r: Row) => rows.push(await seedTask(pool, r));
  await add(
    turn(50, {
      session: POISONED,
      decision: "fresh",
      reason: "no_prior_session",
      followUp: false,
      outcome: "success",
      usage: [20000, 1000, 0, 50000, 0.3, 60000],
      extra: { answer_comment_id: 7001, publish_result: "published", pull_opened: 43 },
    }),
  );
  await add(
    turn(40, {
      session: POISONED,
      decision: "resume",
      reason: "resumed",
      followUp: true,
      outcome: "poisoned",
      usage: [2000, 800, 60000, 3000, 0.05, 30000],
      trigger: "review",
      extra: { failure_reason: "the CLI's session broke" },
    }),
  );
  await add(
    turn(30, {
      session: ACTIVE,
      decision: "fresh",
      reason: "poisoned",
      followUp: true,
      outcome: "success",
      usage: [18000, 900, 0, 60000, 0.33, 70000],
      trigger: "label",
      extra: { answer_comment_id: 7003, publish_result: "published" },
    }),
  );
  await add(
    turn(20, {
      session: ACTIVE,
      decision: "resume",
      reason: "resumed",
      followUp: true,
      outcome: "success",
      usage: [4000, 1200, 70000, 1000, 0.07, 50000],
      trigger: "ci",
      extra: { answer_comment_id: 7004, publish_result: "unchanged" },
    }),
  );
  // Refused by a spend limit: a task, not a turn.
  await add({
    ...key,
    trigger_url: url(5010),
    created_at: at(10),
    finished_at: at(10),
    status: "cancelled",
    outcome: "limit_refused",
    failure_reason: "not run: conversation: spent $0.75 of $0.50",
  });
  // The neighbours.
  await add(
    turn(25, {
      session: "other-agent-session",
      decision: "fresh",
      reason: "no_prior_session",
      followUp: false,
      outcome: "success",
      usage: [9000, 100, 0, 9000, 0.9, 9000],
      extra: { agent: "reviewer" },
    }),
  );
  await add(
    turn(15, {
      session: "other-issue-session",
      decision: "fresh",
      reason: "no_prior_session",
      followUp: false,
      outcome: "success",
      usage: [9000, 100, 0, 9000, 0.8, 9000],
      extra: { issue_number: 43, agent: "reviewer" },
    }),
  );

  // Its sessions: the first poisoned (transcript kept for debugging), the second active, and
  // one retired long ago whose transcript is gone.
  await pool.query(
    `INSERT INTO sessions (session_id, repo, issue_number, agent, state, state_reason, state_changed_at, created_at, last_used_at, repo_id)
     VALUES ($1, $4, $5, $6, 'poisoned', 'the CLI''s session broke', $7, $8, $7, $12),
            ($2, $4, $5, $6, 'active', NULL, NULL, $9, $10, $12),
            ($3, $4, $5, $6, 'retired', 'rewound', $11, $11, $11, $12)`,
    [
      POISONED,
      ACTIVE,
      RETIRED,
      CHAIN_KEY.repo,
      CHAIN_KEY.issueNumber,
      CHAIN_KEY.agent,
      at(39),
      at(50),
      at(30),
      at(19),
      at(60 * 24 * 5),
      CHAIN_KEY.repoId,
    ],
  );
  const half = POISONED_TRANSCRIPT.length >> 1;
  const parts = [POISONED_TRANSCRIPT.subarray(0, half), POISONED_TRANSCRIPT.subarray(half)];
  await writeTranscript(
    pool,
    CHAIN_KEY,
    POISONED,
    null,
    {
      kind: "replace",
      chunks: parts.map((p, i) => ({
        rawOffset: i ? half : 0,
        rawBytes: p.length,
        data: zlib.gzipSync(p),
      })),
    },
    {
      rawBytes: POISONED_TRANSCRIPT.length,
      sha256: chainDigest(EMPTY_DIGEST, parts),
      cliVersion: "2.1.197",
    },
  );
  const active = Buffer.from('{"type":"system","subtype":"init"}\n');
  await writeTranscript(
    pool,
    CHAIN_KEY,
    ACTIVE,
    null,
    {
      kind: "replace",
      chunks: [{ rawOffset: 0, rawBytes: active.length, data: zlib.gzipSync(active) }],
    },
    { rawBytes: active.length, sha256: chainDigest(EMPTY_DIGEST, [active]), cliVersion: "2.1.197" },
  );

  // Where its changes went.
  const k = {
    repoId: repoIdOf(CHAIN_KEY.repo),
    repo: CHAIN_KEY.repo,
    issueNumber: CHAIN_KEY.issueNumber,
    agent: CHAIN_KEY.agent,
  };
  await recordPush(pool, {
    ...k,
    branch: "tether/issue-42",
    baseBranch: "main",
    headSha: "0123456789abcdef0123456789abcdef01234567",
    commits: 2,
  });
  await recordPush(pool, {
    ...k,
    branch: "tether/issue-42",
    baseBranch: "main",
    headSha: "89abcdef0123456789abcdef0123456789abcdef",
    commits: 1,
  });
  await recordPull(pool, k, { number: 43, url: "https://github.com/acme/chain/pull/43" });
  return rows;
}

/** What the chain's totals must be (by hand, from the rows above). */
export const CHAIN_TOTALS = {
  tasks: 5,
  turns: 4,
  followUps: 3,
  resumed: 2,
  refused: 1,
  failed: 1,
  inputTokens: 44000,
  outputTokens: 3900,
  cacheReadTokens: 130000,
  cacheCreationTokens: 114000,
  costUsd: 0.75,
  durationMs: 210000,
};
