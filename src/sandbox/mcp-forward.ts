/**
 * The egress proxy's `/mcp/<name>` route (issue #39): requests of the agent's CLI forwarded to
 * the operator's remote MCP servers, with the operator's headers put on here, so the agent holds
 * no token of them. The URL is the operator's: it may be on a private network, which the
 * forward proxy (egress.ts) never reaches.
 */

import http from "node:http";
import https from "node:https";
import type { Logger } from "../log.js";

/** A remote MCP server as the egress proxy reaches it: its URL and the operator's headers. */
export interface McpRemote {
  url: URL;
  headers: Record<string, string>;
}

/** One request's MCP server: its name, where it is, and the query the agent sent. */
export interface McpTarget extends McpRemote {
  name: string;
  query: string;
}

/** Headers that belong to one connection, never forwarded by a proxy (RFC 9110 §7.6.1). */
export const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** `/mcp/<name>` (with a query, or nothing after it): the remote MCP server of that name. */
export function mcpTarget(
  remotes: Record<string, McpRemote> | undefined,
  target: string,
): McpTarget | undefined {
  const m = /^\/mcp\/([A-Za-z0-9-]{1,48})(\?.*)?$/.exec(target);
  const remote = m ? remotes?.[m[1]!] : undefined;
  if (!m || !remote || !Object.hasOwn(remotes!, m[1]!)) return undefined;
  return { name: m[1]!, ...remote, query: m[2] ?? "" };
}

/**
 * Forwards one request of the agent's CLI to a remote MCP server, streaming both ways (MCP's
 * streamable HTTP answers with JSON or an event stream). What the agent sent as credentials is
 * dropped; the operator's headers are put on.
 */
export function forwardToMcp(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  target: McpTarget,
  log: Logger,
): void {
  const up = target.url;
  const own = new Set(Object.keys(target.headers).map((h) => h.toLowerCase()));
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) {
    const n = name.toLowerCase();
    if (HOP_BY_HOP.has(n) || n === "host" || n === "authorization" || n === "cookie") continue;
    if (own.has(n) || value === undefined) continue;
    headers[n] = value;
  }
  for (const [name, value] of Object.entries(target.headers)) headers[name.toLowerCase()] = value;
  headers.host = up.host;
  const query = target.query || up.search;
  const client = up.protocol === "https:" ? https : http;
  const outgoing = client.request(
    {
      protocol: up.protocol,
      hostname: up.hostname.replace(/^\[(.*)\]$/, "$1"),
      port: up.port || (up.protocol === "https:" ? 443 : 80),
      method: req.method,
      path: `${up.pathname}${query}`,
      headers,
    },
    (upstream) => {
      const back: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(upstream.headers)) {
        const n = name.toLowerCase();
        if (!HOP_BY_HOP.has(n) && n !== "set-cookie" && value !== undefined) back[name] = value;
      }
      res.writeHead(upstream.statusCode ?? 502, back);
      upstream.pipe(res);
      upstream.on("error", () => res.destroy());
    },
  );
  // Unreachable: a 502 that names the server, or a cut stream when the answer had begun.
  const unreachable = (err: Error) => {
    log.warn(
      { err: err.message, mcp: target.name },
      "MCP server unreachable from the egress proxy",
    );
    if (res.headersSent) return void res.destroy();
    res
      .writeHead(502, { "content-type": "text/plain" })
      .end(`Tether could not reach the MCP server ${target.name}\n`);
  };
  outgoing.on("error", unreachable);
  req.pipe(outgoing);
}
