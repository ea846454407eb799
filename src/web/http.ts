import type { IncomingMessage, ServerResponse } from "node:http";

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
