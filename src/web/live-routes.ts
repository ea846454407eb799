/**
 * The live view of a turn (#40): GET /live/<task> (the page) and GET /live/<task>/events (its
 * server-sent events), served by any web process from turn_events (src/sql/turn-events.ts).
 * The stream replays the turn from its start (or from Last-Event-ID), then follows it: a NOTIFY
 * on `tether_live` from the runner wakes it at once, a poll every POLL_MS is the floor (a
 * notification is only a hint), and once the task has finished and everything is sent it says
 * `end` and closes.
 *
 * Access (TETHER_LIVE): `on`, the link's signature for that task (core/live-link.ts), and
 * nothing else opens with it; `token`, the dashboard's token (access.ts). The Host check comes
 * first either way.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AppDeps } from "../deps.js";
import { verifyLiveLink } from "../core/live-link.js";
import { CHANNELS, listen, type Listener } from "../sql/notify.js";
import { liveLinkKey, readLiveTask, readTurnEvents } from "../sql/turn-events.js";
import { dashboardAccess, hostAllowed, hostRefusal } from "./access.js";
import { forbiddenPage, loginPage } from "./dashboard-page.js";
import { livePage } from "./live-page.js";
import { sendHtml, type Handler } from "./http.js";

/** The stream's floor: how often it looks for new events without a notification. */
export const POLL_MS = 2000;
/** A comment line this often keeps proxies from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;

const PATH = /^\/live\/(\d{1,15})(\/events)?\/?$/;

export function liveRoutes(deps: AppDeps): Handler {
  const mode = deps.env.TETHER_LIVE;
  const token = deps.dashboardToken ?? deps.env.TETHER_DASHBOARD_TOKEN;
  const publicHosts = deps.env.TETHER_PUBLIC_HOSTS ?? [];
  const now = deps.now ?? (() => new Date());
  const log = deps.log.child({ component: "live" });
  const hub = notifyHub(deps, log);
  let key: Promise<Buffer> | undefined;
  const linkKey = () =>
    (key ??= liveLinkKey(deps.pool).catch((err: unknown) => {
      key = undefined;
      throw err;
    }));

  return async (req, res) => {
    if (mode === "off") return false;
    const url = new URL(req.url ?? "/", "http://x");
    const m = PATH.exec(url.pathname);
    if (!m) return false;
    const taskId = Number(m[1]);
    const stream = m[2] !== undefined;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET", "content-type": "text/plain; charset=utf-8" });
      res.end("Method not allowed; use GET.\n");
      return true;
    }
    if (!hostAllowed(req.headers.host, publicHosts)) {
      return refuse(res, 421, hostRefusal(req.headers.host), stream);
    }
    const exp = url.searchParams.get("exp");
    const sig = url.searchParams.get("sig");
    if (mode === "token") {
      const access = dashboardAccess(req, token, now());
      if (!access.ok) {
        if (!stream && access.status === 401) return sendHtml(res, 401, (n) => loginPage(n));
        return refuse(res, access.status, access.reason, stream);
      }
    } else {
      let check;
      try {
        check = verifyLiveLink(await linkKey(), taskId, exp, sig, now());
      } catch (err) {
        log.error({ err }, "could not read the live link key");
        return refuse(res, 503, "Could not read the live link key from Postgres.", stream);
      }
      if (!check.ok) return refuse(res, 403, check.reason, stream);
    }
    const task = await readLiveTask(deps.pool, taskId);
    if (!task) return refuse(res, 404, `Tether has no task ${taskId}.`, stream);
    if (!stream) {
      const q = mode === "on" ? `?exp=${exp}&sig=${sig}` : "";
      return sendHtml(res, 200, (n) => livePage(n, task, `/live/${taskId}/events${q}`));
    }
    await follow(req, res, taskId);
    return true;
  };

  async function follow(req: IncomingMessage, res: ServerResponse, taskId: number) {
    const lastId = Number(req.headers["last-event-id"]);
    let last = Number.isSafeInteger(lastId) && lastId > 0 ? lastId : 0;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    });
    res.write("retry: 2000\n\n");
    let closed = false;
    let pumping: Promise<void> | undefined;
    let again = false;
    const pump = async () => {
      for (;;) {
        const rows = await readTurnEvents(deps.pool, taskId, last);
        for (const r of rows) {
          last = r.id;
          const data = JSON.stringify({ id: r.id, kind: r.kind, body: r.body, at: r.at });
          res.write(`id: ${r.id}\nevent: turn\ndata: ${data}\n\n`);
        }
        if (rows.length < 500) break;
      }
      const t = await readLiveTask(deps.pool, taskId);
      if (!t || (t.status !== "running" && t.status !== "queued")) {
        // Anything written before the task finished is read by now: the stream is complete.
        const rest = await readTurnEvents(deps.pool, taskId, last);
        if (rest.length) return void (again = true);
        res.write(`event: end\ndata: ${JSON.stringify({ status: t?.status ?? "gone" })}\n\n`);
        stop();
      }
    };
    const wake = () => {
      if (closed) return;
      if (pumping) {
        again = true;
        return;
      }
      pumping = pump()
        .catch((err: unknown) => log.warn({ err, taskId }, "live stream read failed"))
        .finally(() => {
          pumping = undefined;
          if (again && !closed) {
            again = false;
            wake();
          }
        });
    };
    const poll = setInterval(wake, POLL_MS);
    const beat = setInterval(() => res.write(": keep-alive\n\n"), HEARTBEAT_MS);
    const unsubscribe = hub.subscribe(taskId, wake);
    function stop() {
      if (closed) return;
      closed = true;
      clearInterval(poll);
      clearInterval(beat);
      unsubscribe();
      res.end();
    }
    req.on("close", stop);
    wake();
  }
}

/**
 * One LISTEN connection per web process for every open stream, held only while one is open:
 * the runner's NOTIFY on `tether_live` (payload: the task id) wakes that task's streams.
 */
function notifyHub(deps: AppDeps, log: AppDeps["log"]) {
  const subscribers = new Map<number, Set<() => void>>();
  let listener: Listener | undefined;
  let count = 0;
  const wakeAll = () => {
    for (const set of subscribers.values()) for (const f of set) f();
  };
  return {
    subscribe(taskId: number, wake: () => void): () => void {
      let set = subscribers.get(taskId);
      if (!set) subscribers.set(taskId, (set = new Set()));
      set.add(wake);
      if (count++ === 0) {
        listener = listen(
          deps.pool,
          [CHANNELS.live],
          (_channel, payload) => {
            for (const f of subscribers.get(Number(payload)) ?? []) f();
          },
          { log, name: "tether-live", onReconnect: wakeAll },
        );
      }
      return () => {
        set.delete(wake);
        if (!set.size) subscribers.delete(taskId);
        if (--count === 0) {
          void listener?.close();
          listener = undefined;
        }
      };
    },
  };
}

function refuse(res: ServerResponse, status: number, reason: string, plain: boolean): true {
  if (plain) {
    res.writeHead(status, {
      "content-type": "text/plain; charset=utf-8",
      "cache-control": "no-store",
    });
    res.end(`${reason}\n`);
    return true;
  }
  return sendHtml(res, status, (n) => forbiddenPage(n, reason));
}
