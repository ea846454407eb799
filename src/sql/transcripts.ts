/**
 * The session_transcripts and session_transcript_chunks tables: each session's CLI transcript,
 * as gzip'd chunks of consecutive bytes. A transcript is found by its conversation (the task
 * key) and its session id together, never by the id alone: an id seen elsewhere (in a thread, a
 * log) opens nothing under another key, and no other key's save can replace it. Writes compare-and-set on the head (length and digest),
 * so two saves of one session (a runner whose lease was lost, still saving) cannot interleave.
 *
 * The head's digest (column `sha256`) is, under `digest_scheme` 2, chained over the chunks
 * (chainDigest below), so an append hashes only what it adds; scheme 1 heads (saved before it)
 * hold the sha256 of the whole file and are stored whole again at their next save.
 */
import { createHash } from "node:crypto";
import type { Pool } from "../db/pool.js";
import type { TaskKey } from "../core/task.js";
import { inTransaction, type Queryable } from "./db.js";

export interface TranscriptHead {
  rawBytes: number;
  /** The stored version's digest: chained over the chunks when `chained`, else the file's sha256. */
  sha256: Buffer;
  /** digest_scheme 2 (chainDigest); false for a head saved before it. */
  chained: boolean;
  storedBytes: number;
  chunks: number;
  rewrites: number;
  overBound: boolean;
  cliVersion: string | null;
  /** The name the CLI gave the file, where it matters (a Codex rollout's); null for Claude's. */
  fileName: string | null;
  savedAt: Date;
}

export interface TranscriptChunk {
  rawOffset: number;
  rawBytes: number;
  /** gzip'd bytes. */
  data: Buffer;
}

function toHead(r: Record<string, unknown>): TranscriptHead {
  return {
    rawBytes: Number(r.raw_bytes),
    sha256: r.sha256 as Buffer,
    chained: Number(r.digest_scheme) === 2,
    storedBytes: Number(r.stored_bytes),
    chunks: r.chunks as number,
    rewrites: r.rewrites as number,
    overBound: r.over_bound as boolean,
    cliVersion: (r.cli_version as string | null) ?? null,
    fileName: (r.file_name as string | null) ?? null,
    savedAt: r.saved_at as Date,
  };
}

/** A transcript's row: its conversation and its session id ($1 … $4 of every query here). */
const ROW = `repo_id = $1 AND issue_number = $2 AND agent = $3 AND session_id = $4`;
const rowOf = (key: TaskKey, sessionId: string) => [
  key.repoId,
  key.issueNumber,
  key.agent,
  sessionId,
];

export async function transcriptHead(
  db: Queryable,
  key: TaskKey,
  sessionId: string,
): Promise<TranscriptHead | null> {
  const { rows } = await db.query(
    `SELECT * FROM session_transcripts WHERE ${ROW}`,
    rowOf(key, sessionId),
  );
  return rows[0] ? toHead(rows[0] as Record<string, unknown>) : null;
}

/** The chained digest of nothing stored: sha256 of no bytes. */
export const EMPTY_DIGEST = createHash("sha256").digest();

/** The chained digest after `chunks` (their raw bytes, in order) follow the version `from`. */
export function chainDigest(from: Buffer, chunks: Iterable<Buffer>): Buffer {
  let d: Buffer = from;
  for (const c of chunks)
    d = createHash("sha256").update(d).update(createHash("sha256").update(c).digest()).digest();
  return d;
}

/** The raw length of each stored chunk, in order (no data): where the chain's links fall. */
export async function transcriptChunkSizes(
  db: Queryable,
  key: TaskKey,
  sessionId: string,
): Promise<number[]> {
  const { rows } = await db.query(
    `SELECT raw_bytes FROM session_transcript_chunks WHERE ${ROW} ORDER BY seq`,
    rowOf(key, sessionId),
  );
  return rows.map((r) => r.raw_bytes as number);
}

/** Every chunk, in order. */
export async function transcriptChunks(
  db: Queryable,
  key: TaskKey,
  sessionId: string,
): Promise<TranscriptChunk[]> {
  const { rows } = await db.query(
    `SELECT raw_offset, raw_bytes, data FROM session_transcript_chunks
      WHERE ${ROW} ORDER BY seq`,
    rowOf(key, sessionId),
  );
  return rows.map((r) => ({
    rawOffset: Number(r.raw_offset),
    rawBytes: r.raw_bytes as number,
    data: r.data as Buffer,
  }));
}

export type TranscriptWrite =
  /** `chunks` continue the stored bytes (their offsets start at the head's rawBytes); the head
   * must be chained (a scheme 1 head is only ever replaced). */
  | { kind: "append"; chunks: TranscriptChunk[] }
  /** `chunks` are the whole transcript (the first time, or the file was rewritten). */
  | { kind: "replace"; chunks: TranscriptChunk[] };

/**
 * Store what a save computed, if the head is still `expected` (null: no head yet). Returns
 * false when another save got there first, so the caller can read the head again.
 */
export async function writeTranscript(
  pool: Pool,
  key: TaskKey,
  sessionId: string,
  expected: { rawBytes: number; sha256: Buffer } | null,
  write: TranscriptWrite,
  after: { rawBytes: number; sha256: Buffer; cliVersion: string | null; fileName?: string | null },
): Promise<boolean> {
  const row = rowOf(key, sessionId);
  return inTransaction(pool, async (client) => {
    const cur = await client.query(
      `SELECT raw_bytes, sha256, chunks, over_bound, digest_scheme FROM session_transcripts
        WHERE ${ROW} FOR UPDATE`,
      row,
    );
    const head = cur.rows[0] as Record<string, unknown> | undefined;
    const same = expected
      ? head !== undefined &&
        !head.over_bound &&
        Number(head.raw_bytes) === expected.rawBytes &&
        (head.sha256 as Buffer).equals(expected.sha256) &&
        (write.kind === "replace" || Number(head.digest_scheme) === 2)
      : head === undefined || write.kind === "replace";
    if (!same) return false;
    let seq = write.kind === "append" && head ? (head.chunks as number) : 0;
    if (write.kind === "replace") {
      await client.query(`DELETE FROM session_transcript_chunks WHERE ${ROW}`, row);
      await client.query(
        `INSERT INTO session_transcripts (repo_id, issue_number, agent, session_id, raw_bytes, sha256, cli_version)
         VALUES ($1, $2, $3, $4, 0, $5, $6)
         ON CONFLICT (repo_id, issue_number, agent, session_id) DO UPDATE SET raw_bytes = 0,
           stored_bytes = 0, chunks = 0, over_bound = false,
           rewrites = session_transcripts.rewrites + 1`,
        [...row, after.sha256, after.cliVersion],
      );
    }
    for (const c of write.chunks) {
      await client.query(
        `INSERT INTO session_transcript_chunks (repo_id, issue_number, agent, session_id, seq, raw_offset, raw_bytes, data)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [...row, seq++, c.rawOffset, c.rawBytes, c.data],
      );
    }
    await client.query(
      `UPDATE session_transcripts
          SET raw_bytes = $5, sha256 = $6, cli_version = COALESCE($7, cli_version), chunks = $8,
              file_name = $9, digest_scheme = 2,
              stored_bytes = (SELECT COALESCE(sum(length(data)), 0) FROM session_transcript_chunks
                               WHERE ${ROW}),
              saved_at = now()
        WHERE ${ROW}`,
      [...row, after.rawBytes, after.sha256, after.cliVersion, seq, after.fileName ?? null],
    );
    return true;
  });
}

/** The transcript grew past the bound: drop what is stored, and say so for the next decision. */
export async function markOverBound(
  db: Queryable,
  key: TaskKey,
  sessionId: string,
  cliVersion: string | null,
): Promise<void> {
  await db.query(
    `WITH gone AS (DELETE FROM session_transcript_chunks WHERE ${ROW})
     INSERT INTO session_transcripts (repo_id, issue_number, agent, session_id, sha256, over_bound, cli_version)
     VALUES ($1, $2, $3, $4, '\\x', true, $5)
     ON CONFLICT (repo_id, issue_number, agent, session_id) DO UPDATE SET over_bound = true,
       raw_bytes = 0, stored_bytes = 0, chunks = 0, sha256 = '\\x', saved_at = now()`,
    [...rowOf(key, sessionId), cliVersion],
  );
}

export interface PruneRules {
  /** An active session's transcript is kept at least this long after its last turn. */
  idleMs: number;
  /**
   * Beyond `idleMs`, an active session's is kept for as long as its repository's resume time to
   * live (`resume.ttlHours` in the settings snapshot of the key's latest task) still allows a
   * resume; this when no task of the key has one.
   */
  unknownTtlMs: number;
  /** A poisoned or retired session's is kept this long after it broke, for debugging. */
  debugKeepMs: number;
}

/**
 * Collection: drop the stored transcripts no turn will resume again: an active session's once
 * it is idle past both `idleMs` and its repository's time to live (so its next turn says
 * `expired`), a poisoned or retired one's after the debugging window. A head over the size
 * bound holds no chunks and is kept like any other, so the next turn says `session_too_large`.
 * Returns how many transcripts and how many compressed bytes went.
 */
export async function pruneTranscripts(
  db: Queryable,
  rules: PruneRules,
): Promise<{ transcripts: number; bytes: number }> {
  const { rows } = await db.query(
    `DELETE FROM session_transcripts tr USING sessions s
      WHERE s.session_id = tr.session_id
        AND CASE WHEN s.state = 'active' THEN
              s.last_used_at < now() - make_interval(secs => greatest($1::double precision,
                COALESCE((SELECT (t.repo_settings #>> '{resume,ttlHours}')::double precision * 3600000
                            FROM tasks t
                           WHERE t.repo_id = s.repo_id AND t.issue_number = s.issue_number
                             AND t.agent = s.agent
                             AND jsonb_typeof(t.repo_settings #> '{resume,ttlHours}') = 'number'
                           ORDER BY t.id DESC LIMIT 1),
                         $2::double precision)) / 1000)
            ELSE COALESCE(s.state_changed_at, s.last_used_at)
                   < now() - make_interval(secs => $3::double precision / 1000)
            END
     RETURNING tr.stored_bytes`,
    [rules.idleMs, rules.unknownTtlMs, rules.debugKeepMs],
  );
  return {
    transcripts: rows.length,
    bytes: rows.reduce((n, r) => n + Number(r.stored_bytes), 0),
  };
}

/** A session as an operator looks it up, with its stored transcript's head if one is kept. */
export interface StoredSession {
  sessionId: string;
  repoId: number;
  repo: string;
  issueNumber: number;
  agent: string;
  cli: string;
  state: string;
  stateReason: string | null;
  lastUsedAt: Date;
  transcript: TranscriptHead | null;
}

/** Sessions whose id starts with `prefix`, newest first, at most `limit`. */
export async function sessionsByPrefix(
  db: Queryable,
  prefix: string,
  limit: number,
): Promise<StoredSession[]> {
  const { rows } = await db.query(
    `SELECT tr.*, s.session_id AS s_session_id, s.repo_id AS s_repo_id, s.repo AS s_repo,
            s.issue_number AS s_issue_number, s.agent AS s_agent, s.cli, s.state,
            s.state_reason, s.last_used_at
       FROM sessions s
       LEFT JOIN session_transcripts tr
              ON tr.session_id = s.session_id AND tr.repo_id = s.repo_id
             AND tr.issue_number = s.issue_number AND tr.agent = s.agent
      WHERE left(s.session_id, length($1)) = $1
      ORDER BY s.last_used_at DESC LIMIT $2`,
    [prefix, limit],
  );
  return rows.map((r: Record<string, unknown>) => ({
    sessionId: r.s_session_id as string,
    repoId: r.s_repo_id as number,
    repo: r.s_repo as string,
    issueNumber: r.s_issue_number as number,
    agent: r.s_agent as string,
    cli: r.cli as string,
    state: r.state as string,
    stateReason: (r.state_reason as string | null) ?? null,
    lastUsedAt: r.last_used_at as Date,
    transcript: r.session_id ? toHead(r) : null,
  }));
}
