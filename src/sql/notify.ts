import type pg from "pg";
import type { Logger } from "../log.js";
import type { Pool, PoolClient } from "../db/pool.js";
import type { Queryable } from "./db.js";

/**
 * Postgres NOTIFY channels. A notification is only ever a latency hint: every listener also
 * polls, so a notification lost to a reconnect delays work by one poll interval, never loses it.
 */
export const CHANNELS = {
  /** A delivery was added to the intake inbox (payload: delivery id). */
  intake: "tether_intake",
  /** A task was queued or gained a comment (payload: task id). */
  tasks: "tether_tasks",
  /** A running task was asked to stop (payload: task id). */
  cancel: "tether_cancel",
  /** A running turn recorded an event for its live view (payload: task id). */
  live: "tether_live",
} as const;
export type Channel = (typeof CHANNELS)[keyof typeof CHANNELS];

/** NOTIFY `channel` with `payload`; inside a transaction it is sent at commit, or never. */
export async function notify(db: Queryable, channel: Channel, payload = ""): Promise<void> {
  await db.query("SELECT pg_notify($1, $2)", [channel, payload]);
}

export interface Listener {
  /** Resolves once the first LISTEN is in place (or failed; the listener keeps retrying). */
  ready: Promise<void>;
  close(): Promise<void>;
}

export interface ListenOptions {
  log?: Pick<Logger, "warn" | "debug">;
  /** First reconnect delay; doubles up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** application_name for the listening connection, so operators can tell it apart. */
  name?: string;
}

/**
 * LISTEN on one dedicated connection taken from the pool, calling `onNotify` for each
 * notification on `channels`. When the connection drops it is thrown away and a new one
 * listens after a backoff; `onReconnect` runs then, since notifications sent meanwhile are lost.
 */
export function listen(
  pool: Pool,
  channels: readonly Channel[],
  onNotify: (channel: string, payload: string) => void,
  opts: ListenOptions & { onReconnect?: () => void } = {},
): Listener {
  const minBackoff = opts.minBackoffMs ?? 250;
  const maxBackoff = opts.maxBackoffMs ?? 10_000;
  let client: PoolClient | undefined;
  let closed = false;
  let backoff = minBackoff;
  let timer: NodeJS.Timeout | undefined;
  let firstReady: () => void = () => {};
  const ready = new Promise<void>((r) => (firstReady = r));

  const onNotification = (msg: pg.Notification) => onNotify(msg.channel, msg.payload ?? "");

  const connect = async (isRetry: boolean): Promise<void> => {
    if (closed) return;
    let c: PoolClient | undefined;
    try {
      c = await pool.connect();
      c.on("notification", onNotification);
      const lost = (err?: Error) => drop(c!, err);
      c.once("error", lost);
      c.once("end", () => lost());
      if (opts.name) await c.query("SELECT set_config('application_name', $1, false)", [opts.name]);
      for (const ch of channels) await c.query(`LISTEN ${quoteIdent(ch)}`);
      if (closed) {
        c.release();
        return;
      }
      client = c;
      backoff = minBackoff;
      if (isRetry) opts.onReconnect?.();
    } catch (err) {
      opts.log?.warn({ err, retryInMs: backoff }, "LISTEN failed; retrying");
      if (c) c.release(err as Error);
      schedule();
    } finally {
      firstReady();
    }
  };

  const drop = (c: PoolClient, err?: Error) => {
    if (client !== c) return;
    client = undefined;
    c.removeListener("notification", onNotification);
    c.release(err ?? new Error("listener connection ended"));
    if (closed) return;
    opts.log?.warn({ err, retryInMs: backoff }, "LISTEN connection lost; reconnecting");
    schedule();
  };

  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => void connect(true), backoff);
    backoff = Math.min(maxBackoff, backoff * 2);
  };

  void connect(false);
  return {
    ready,
    async close() {
      closed = true;
      clearTimeout(timer);
      const c = client;
      client = undefined;
      if (!c) return;
      c.removeListener("notification", onNotification);
      try {
        await c.query("UNLISTEN *");
        if (opts.name) await c.query("RESET application_name");
        c.release();
      } catch (err) {
        c.release(err as Error);
      }
    },
  };
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
