/**
 * The `github_cache` and `github_cache_pushes` tables: GitHub's last answer to a GET per
 * installation, request and token, for conditional requests (src/github/conditional-requests.ts),
 * and the pushes that end a pinned answer's life. Shared by every process on the database: see
 * the migration (1763800004400) for why in Postgres.
 */
import type { Queryable } from "./db.js";

/** How long a pinned answer is served without asking, even when no push came. */
export const PIN_MAX_AGE_MINUTES = 60;
/** Answers not confirmed for this long are dropped. */
const KEEP_DAYS = 7;
/** Another token's answer to the same request is dropped once this old (tokens live an hour). */
const OTHER_TOKEN_KEEP_HOURS = 2;

export interface CacheKey {
  installationId: number;
  /** URL with query, a space, and the Accept header. */
  request: string;
  /** sha256 of the token, 16 hex characters. */
  tokenFingerprint: string;
  /** What the token may read (its granted repositories and permissions): pins are per scope. */
  tokenScope: string;
}

export interface StoredAnswer {
  etag: string | null;
  lastModified: string | null;
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export interface CachedAnswer extends StoredAnswer {
  /** This token got it: its ETag is good (GitHub's ETags are per token). */
  sameToken: boolean;
  /** Pinned and no push since: serve it without asking. */
  fresh: boolean;
  /**
   * The database's clock as the lookup ran: the validation time of what the request brings. Kept
   * as Postgres wrote it (microseconds): a Date's milliseconds could put it before a push made
   * in the same millisecond.
   */
  readAt: string;
}

/**
 * The answer to serve or validate against: a fresh pinned one first (pinned by a token of this
 * token's scope, validated after the pinned scope's last push, and within PIN_MAX_AGE_MINUTES; a
 * scope no push was ever seen for is never fresh: without the app's `push` event nothing would
 * say the file changed), then this token's, then the newest of any token (its Last-Modified is
 * good for any: GitHub still answers the asking token as its scope allows). `readAt` is always
 * returned.
 */
export async function lookUpAnswer(
  db: Queryable,
  k: CacheKey,
): Promise<{ readAt: string; hit: CachedAnswer | undefined }> {
  const { rows } = await db.query<{
    read_at: string;
    etag: string | null;
    last_modified: string | null;
    status: number | null;
    headers: Record<string, string> | null;
    body: unknown;
    same_token: boolean | null;
    fresh: boolean | null;
  }>(
    `SELECT now()::text AS read_at, c.*
       FROM (SELECT 1) one
       LEFT JOIN LATERAL (
         SELECT c.etag, c.last_modified, c.status, c.headers, c.body,
                c.token_fingerprint = $3 AS same_token,
                COALESCE(c.pinned AND c.scope IS NOT NULL AND c.token_scope = $5
                  AND c.validated_at > now() - make_interval(mins => $4)
                  AND c.validated_at > p.pushed_at, false) AS fresh
           FROM github_cache c
           LEFT JOIN github_cache_pushes p ON p.scope = c.scope
          WHERE c.installation_id = $1 AND c.request = $2
          ORDER BY 7 DESC, 6 DESC, c.validated_at DESC
          LIMIT 1
       ) c ON true`,
    [k.installationId, k.request, k.tokenFingerprint, PIN_MAX_AGE_MINUTES, k.tokenScope],
  );
  const r = rows[0]!;
  if (r.status === null) return { readAt: r.read_at, hit: undefined };
  return {
    readAt: r.read_at,
    hit: {
      etag: r.etag,
      lastModified: r.last_modified,
      status: r.status,
      headers: r.headers ?? {},
      body: r.body,
      sameToken: r.same_token === true,
      fresh: r.fresh === true,
      readAt: r.read_at,
    },
  };
}

/**
 * Keep `a` as this token's answer, current as of `validatedAt` (the lookup's `readAt`), pinned
 * under `scope` when given. Drops other tokens' answers to the request that are past use.
 */
export async function storeAnswer(
  db: Queryable,
  k: CacheKey,
  a: StoredAnswer,
  o: { validatedAt: string; pinScope: string | null },
): Promise<void> {
  await db.query(
    `WITH kept AS (
       INSERT INTO github_cache AS c
         (installation_id, request, token_fingerprint, token_scope, scope, etag, last_modified,
          status, headers, body, pinned, validated_at)
       VALUES ($1, $2, $3, $12, $4::text, $5, $6, $7, $8, $9, $4::text IS NOT NULL,
               $10::timestamptz)
       ON CONFLICT (installation_id, request, token_fingerprint) DO UPDATE
         SET token_scope = EXCLUDED.token_scope,
             scope = EXCLUDED.scope, etag = EXCLUDED.etag, last_modified = EXCLUDED.last_modified,
             status = EXCLUDED.status, headers = EXCLUDED.headers, body = EXCLUDED.body,
             pinned = EXCLUDED.pinned,
             validated_at = GREATEST(c.validated_at, EXCLUDED.validated_at)
       RETURNING 1
     )
     DELETE FROM github_cache
      WHERE installation_id = $1 AND request = $2 AND token_fingerprint <> $3
        AND validated_at < now() - make_interval(hours => $11)`,
    [
      k.installationId,
      k.request,
      k.tokenFingerprint,
      o.pinScope,
      a.etag,
      a.lastModified,
      a.status,
      JSON.stringify(a.headers),
      a.body === undefined ? null : JSON.stringify(a.body),
      o.validatedAt,
      OTHER_TOKEN_KEEP_HOURS,
      k.tokenScope,
    ],
  );
}

/** A push to `scope`'s default branch: its pinned answers are asked again (conditionally). */
export async function recordPush(db: Queryable, scope: string): Promise<void> {
  await db.query(
    `INSERT INTO github_cache_pushes (scope, pushed_at) VALUES ($1, now())
     ON CONFLICT (scope) DO UPDATE SET pushed_at = GREATEST(github_cache_pushes.pushed_at, now())`,
    [scope.toLowerCase()],
  );
}

/** Drop answers nobody confirmed for a week, and pushes older than any pin. */
export async function pruneAnswers(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM github_cache WHERE validated_at < now() - make_interval(days => $1)`,
    [KEEP_DAYS],
  );
  await db.query(
    `DELETE FROM github_cache_pushes WHERE pushed_at < now() - make_interval(days => $1)`,
    [KEEP_DAYS],
  );
  return rowCount ?? 0;
}
