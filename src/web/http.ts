import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../log.js";

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

/** Renders a page whose inline style and script carry this response's CSP nonce. */
export type RenderPage = (nonce: string) => string;

/**
 * Answers with the page `render` makes, under a Content-Security-Policy with a fresh nonce:
 * everything the page needs is inline and nonced, and it talks only to its own origin.
 */
export function sendHtml(res: ServerResponse, status: number, render: RenderPage): true {
  const n = randomBytes(16).toString("base64");
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": [
      "default-src 'none'",
      `script-src 'nonce-${n}'`,
      `style-src 'nonce-${n}'`,
      "connect-src 'self'",
      "img-src 'self' data:",
      "form-action 'self'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join("; "),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
  });
  res.end(render(n));
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

/** How long close() lets requests being answered finish before it cuts their connections. */
export const CLOSE_GRACE_MS = 2000;

export interface Served {
  /** http://host:port, no trailing slash. */
  url: string;
  close(): Promise<void>;
}

/**
 * The server's HTTP server: a plain node:http server over a list of handlers (first that
 * answers wins, 404 otherwise). A handler that throws gets a 500, never a crash. With `log`,
 * every request gets one access-log line (`name: "http"`) once answered: method, path, status
 * and time; the URL's query goes only into the `req.url` field, where the logger blanks a
 * `?token=` (src/log.ts), and no header is logged.
 */
export function serveHandlers(
  handlers: Handler[],
  opts: { host?: string; port?: number; log?: Logger } = {},
): Promise<Served> {
  const access = opts.log?.child({ name: "http" });
  const server = createServer((req, res) => {
    if (access) {
      const started = performance.now();
      res.once("finish", () => {
        const ms = Math.round(performance.now() - started);
        access.info(
          { req: { method: req.method, url: req.url }, res: { statusCode: res.statusCode }, ms },
          `${req.method} ${pathOf(req)} ${res.statusCode} - ${ms}ms`,
        );
      });
    }
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
        // Requests being answered finish (a webhook's is milliseconds), idle keep-alive
        // connections close at once, and whatever is still open after CLOSE_GRACE_MS is cut.
        close: () =>
          new Promise<void>((done) => {
            const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
            cut.unref();
            server.close(() => {
              clearTimeout(cut);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
