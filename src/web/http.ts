import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Handler = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

export function pathOf(req: IncomingMessage): string {
  return new URL(req.url ?? "/", "http://x").pathname;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): true {
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
  });
  res.end(JSON.stringify(body));
  return true;
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
