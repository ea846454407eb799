/**
 * Riding out a database restart or failover. A statement that failed because the server could
 * not be reached or cut the connection is tried again, with backoff, for a bounded time; any
 * other error is thrown at once. Without this, a Postgres restart of a few seconds failed every
 * turn that happened to write meanwhile (and left intake deliveries waiting out their lease).
 *
 * Only for statements that are safe to send twice: a connection cut just after COMMIT loses the
 * reply, not the write. The runner's writes are scoped to its lease and idempotent; the inbox's
 * bookkeeping is too. Transactions (pool.connect()) are never retried here.
 */
import type { Pool } from "./pool.js";

/** Socket-level failures: the server is down, restarting, or unreachable. */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** SQLSTATEs of a server going away: admin/crash shutdown, not accepting connections yet. */
const SERVER_CODES = new Set(["57P01", "57P02", "57P03"]);

/** node-postgres and pg-pool say these in words, without a code. */
const MESSAGES =
  /Connection terminated|terminating connection|timeout exceeded when trying to connect|Client has encountered a connection error|Connection refused/i;

/** Whether the error means the database was unreachable or dropped the connection. */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  const code = typeof e?.code === "string" ? e.code : "";
  if (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith("08")) return true;
  return typeof e?.message === "string" && MESSAGES.test(e.message);
}

export interface RetryOptions {
  /** Give up (and throw the last error) once this long has passed. Default 30 s. */
  maxWaitMs?: number;
  /** First pause; it doubles up to maxDelayMs. Default 100 ms. */
  firstDelayMs?: number;
  maxDelayMs?: number;
  /** Told before each pause (for a log line). */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/** Run `work`, trying again while it fails with a connection error and time is left. */
export async function retryOnDisconnect<T>(
  work: () => Promise<T>,
  opts: RetryOptions = {},
): Promise<T> {
  const deadline = Date.now() + (opts.maxWaitMs ?? 30_000);
  let delay = opts.firstDelayMs ?? 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!isConnectionError(err) || Date.now() + delay > deadline) throw err;
      opts.onRetry?.(err, attempt, delay);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(opts.maxDelayMs ?? 2000, delay * 2);
    }
  }
}

/**
 * The pool, with `query` going through retryOnDisconnect. Everything else (connect, end, events)
 * is the pool's own, so transactions keep failing fast and whole.
 */
export function retryingPool(pool: Pool, opts: RetryOptions = {}): Pool {
  const query = (...args: unknown[]) => {
    const run = () => (pool.query as (...a: unknown[]) => Promise<unknown>)(...args);
    // The callback form reports through its callback; leave it alone.
    return typeof args.at(-1) === "function" ? run() : retryOnDisconnect(run, opts);
  };
  return new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === "query") return query;
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function"
        ? (value as (...a: unknown[]) => unknown).bind(target)
        : value;
    },
  });
}
