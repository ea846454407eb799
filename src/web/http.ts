import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Handler = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

export function pathOf(req: IncomingMessage): string {
  return new URL(req.url ?? "/", "http://x").pathname;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): true {
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    ...headers,
  });
  res.end(JSON.stringify(body));
  return true;
}

/** A client must have sent its request's headers this long after it started them. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** A client must have sent its whole request (headers and body) this long after it started it. */
export const REQUEST_TIMEOUT_MS = 30_000;

/**
 * How long an idle keep-alive connection stays open. Longer than any client's or proxy's own
 * idle timeout (undici's 4 s, a load balancer's 60 s), so the client always closes an idle
 * connection first: with the server closing first (Node's default, 5 s), a request sent on a
 * connection at the moment the server drops it fails with "other side closed", a race a loaded
 * machine makes common.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * Node's limits on slow clients, for every route of a server: a request whose headers take
 * longer than HEADERS_TIMEOUT_MS, or whose headers and body together take longer than
 * REQUEST_TIMEOUT_MS, is answered 408 and its connection closed, so a sender trickling bytes
 * (a slowloris) cannot hold a socket for long (Node's defaults are 60 s and 5 minutes). Node
 * checks every 30 s, so the cut comes up to 30 s late; the webhook route's own body deadline is
 * exact. Can be applied to a server that already listens.
 */
export function limitSlowClients(server: Server): Server {
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  return server;
}

export interface Served {
  /** http://host:port, no trailing slash. */
  url: string;
  close(): Promise<void>;
}

/**
 * A plain HTTP server over a list of handlers (first that answers wins, 404 otherwise), for
 * processes without Probot's server (a runner-only process exposing /metrics, benchmarks,
 * tests). A handler that throws gets a 500, never a crash.
 */
export function serveHandlers(
  handlers: Handler[],
  opts: { host?: string; port?: number } = {},
): Promise<Served> {
  const server = createServer((req, res) => {
    void (async () => {
      try {
        for (const handle of handlers) if (await handle(req, res)) return;
        if (!res.headersSent) res.writeHead(404).end();
      } catch (err) {
        if (!res.headersSent) sendJson(res, 500, { error: (err as Error).message });
        else res.destroy();
      }
    })();
  });
  limitSlowClients(server);
  const host = opts.host ?? "127.0.0.1";
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      const addr = server.address() as AddressInfo;
      resolve({
        url: `http://${host.includes(":") ? `[${host}]` : host}:${addr.port}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
