/**
 * The egress proxy: the only way out of a sandbox. One per run, listening on a unix socket that
 * is bound into the sandbox (an in-sandbox bridge makes it 127.0.0.1:EGRESS_PORT there).
 *
 * - Requests in origin form (`POST /v1/messages`) go to the model API: the operator's base URL,
 *   with the real credentials put on here. The CLI inside only ever holds placeholders, so
 *   nothing the agent can read is worth stealing, and a key it sends anywhere else is useless.
 *   Only the model call itself goes through (the endpoint's routes, matched exactly as sent, so
 *   `..` and percent-encoded dots or slashes never match): the key also opens the account's
 *   files, batches and admin routes, which an agent has no business with (#28). Every call let
 *   through is metered from the upstream's answer (model-meter.ts) and counted against the
 *   turn's budget, whoever made it: the CLI, or the agent with curl. And only what a CLI's own
 *   turn asks for (#38): the whole body is read first (bounded) and checked by the endpoint's
 *   rules (model-call-rules.ts), so no server-side tool, MCP connector, stored file or response
 *   of another conversation is asked for with the operator's key. What was checked is what is
 *   sent: the parsed body, serialised again (no second parser can read it differently).
 * - `/mcp/<name>` goes to the operator's remote MCP server of that name (mcp-forward.ts).
 * - `CONNECT host:443` and absolute-form `GET http://host/…` are forward-proxy requests, allowed
 *   by the agent's network policy: `model-only` (none), `open` (any public host) or a host
 *   list. Whatever the policy, only ports 80 and 443, and never an address on a private,
 *   loopback or link-local network (Tether's database, the cloud metadata endpoint, the host's
 *   own services): names are resolved here and the connection goes to the address checked.
 */
import dns from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Duplex } from "node:stream";
import type { Logger } from "../log.js";
import { closeSocket, listenOnSocket } from "./unix-socket.js";
import { EGRESS_PORT } from "./bwrap-args.js";
import { modelCallRefusal, type ModelCallRules } from "./model-call-rules.js";
import {
  forwardToMcp,
  HOP_BY_HOP,
  mcpTarget,
  type McpRemote,
  type McpTarget,
} from "./mcp-forward.js";
import { ResponseMeter, type MeteredUsage, type ModelApi } from "./model-meter.js";

/** Where an agent may connect besides the model API. */
export type NetworkPolicy =
  | { kind: "model-only" }
  | { kind: "open" }
  /** Exact names, or `*.example.com` for any name under example.com. */
  | { kind: "hosts"; hosts: string[] };

export interface ModelEndpoint {
  /** The real model API base, e.g. https://api.anthropic.com or a gateway URL with a path. */
  upstream: URL;
  /** Set on every model request (the real credentials, custom headers). */
  headers: Record<string, string>;
  /** Dropped from every model request first (the placeholders the CLI sent). Lower case. */
  strip: string[];
  /** The only requests forwarded; anything else is answered 403 here. */
  routes: ModelRoute[];
  /** What a model call's body and headers may ask for (model-call-rules.ts); the rest is 403. */
  rules: ModelCallRules;
  /** How the answers report usage, and what it costs; without it nothing is counted. */
  meter?: { api: ModelApi; costUsd: (usage: MeteredUsage) => number };
}

/** One request the model API is reached with, as the sandboxed CLI sends it. */
export interface ModelRoute {
  method: string;
  /** The path as sent, before the upstream's own base path is put in front. Matched exactly. */
  path: string;
  /**
   * Instead of `path`, a whole-path pattern (`^…$`), for an API that names the model in the
   * path (Gemini's `/v1beta/models/{model}:streamGenerateContent`); `path` is then what a
   * refusal shows.
   */
  pattern?: RegExp;
  /** The query strings allowed, exactly (without `?`); "" for none. Default: none. */
  queries?: string[];
}

export interface EgressOptions {
  socketPath: string;
  model: ModelEndpoint;
  network: NetworkPolicy;
  log: Logger;
  /** Addresses never connected to (default: private, loopback, link-local, …). */
  forbidden?: (address: string) => boolean;
  /** Name resolution (default: the system's). */
  lookup?: (host: string) => Promise<string[]>;
  /** Ports a forward-proxy request may reach (default: 80 and 443). */
  ports?: ReadonlySet<number>;
  /**
   * The turn's spend limit, USD: once the metered spend reaches it, further model requests are
   * refused (the call that reached it finishes, so its answer is not lost).
   */
  budgetUsd?: number;
  /** Called each time the metered spend grows, with the run's total so far. */
  onSpend?: (spentUsd: number) => void;
  /** Called when a model request is refused because the budget was reached (stop the run). */
  onOverBudget?: (spentUsd: number) => void;
  /**
   * Model calls in flight at once (default 8); more are answered 429. A call's cost is known
   * only once its answer starts, so this bounds how far parallel calls can overshoot the budget.
   */
  maxModelCalls?: number;
  /**
   * Server-side tool types the operator allows (TETHER_PROXY_SERVER_TOOLS): prefixes such as
   * `web_search`. Default none.
   */
  serverTools?: readonly string[];
  /** The largest model-call body read and checked (default 32 MiB); larger ones get a 413. */
  maxModelBodyBytes?: number;
  /**
   * Remote MCP servers (issue #39), by name: a request for `/mcp/<name>` is forwarded to the
   * server's URL with the operator's headers put on here, so the agent holds no token of it.
   */
  mcpRemotes?: Record<string, McpRemote>;
}

export interface EgressStats {
  /** Model requests forwarded. */
  modelRequests: number;
  /** What the forwarded model calls cost, from the usage their answers reported (USD). */
  spentUsd: number;
  /** Model-API requests refused (not a model call, or over the budget), newest last (50 kept). */
  modelRefused: Array<{ method: string; target: string; reason: string }>;
  /** Forward-proxy connections let through, by host. */
  allowed: Record<string, number>;
  /** Forward-proxy attempts refused, newest last (at most 50 kept). */
  refused: Array<{ host: string; reason: string }>;
  /** Requests forwarded to each remote MCP server. */
  mcpRequests: Record<string, number>;
}

export interface Egress {
  readonly socketPath: string;
  stats(): EgressStats;
  close(): Promise<void>;
}

const ALLOWED_PORTS = new Set([80, 443]);
/**
 * The largest model-call body the proxy reads: the Messages API's own limit (32 MB). A fresh
 * Claude turn sends ~90 KB; a long session's history a few MB.
 */
const MAX_MODEL_BODY_BYTES = 32 * 1024 * 1024;

/** IPv4 networks no agent connects to, whatever its policy. */
const FORBIDDEN_V4 = (() => {
  const list = new net.BlockList();
  for (const [net4, bits] of [
    ["0.0.0.0", 8],
    ["10.0.0.0", 8],
    ["100.64.0.0", 10],
    ["127.0.0.0", 8],
    ["169.254.0.0", 16],
    ["172.16.0.0", 12],
    ["192.0.0.0", 24],
    ["192.168.0.0", 16],
    ["198.18.0.0", 15],
    ["224.0.0.0", 4],
    ["240.0.0.0", 4],
  ] as const)
    list.addSubnet(net4, bits, "ipv4");
  return list;
})();

/** IPv6 networks no agent connects to (those that embed an IPv4 address are judged by it). */
const FORBIDDEN_V6 = (() => {
  const list = new net.BlockList();
  for (const [net6, bits] of [
    ["::", 128],
    ["::1", 128],
    ["fc00::", 7],
    ["fe80::", 10],
    ["fec0::", 10],
    ["ff00::", 8],
    // Teredo (its client address is obfuscated inside) and the documentation prefix.
    ["2001::", 32],
    ["2001:db8::", 32],
  ] as const)
    list.addSubnet(net6, bits, "ipv6");
  return list;
})();

/**
 * An IPv6 address as its 16 bytes, whatever its spelling (`::`, zero padding, upper case, a
 * dotted IPv4 tail, a zone); null when it is not one. Strings are not compared: `::7f00:1`,
 * `::127.0.0.1` and `0:0:0:0:0:0:7f00:0001` are one address.
 */
export function ipv6Bytes(address: string): Uint8Array | null {
  const plain = address.replace(/%.*$/, "");
  if (!net.isIPv6(plain)) return null;
  let text = plain.toLowerCase();
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  const groups = (part: string | undefined) => (part ? part.split(":") : []);
  const head = groups(halves[0]);
  const rest = groups(halves[1]);
  const all =
    halves.length === 2
      ? [...head, ...Array<string>(8 - head.length - rest.length).fill("0"), ...rest]
      : head;
  if (all.length !== 8) return null;
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    const v = parseInt(g, 16);
    bytes[i * 2] = v >> 8;
    bytes[i * 2 + 1] = v & 0xff;
  });
  return bytes;
}

/**
 * The IPv4 address an IPv6 address carries, for the forms that reach an IPv4 host: mapped
 * (::ffff:a.b.c.d), translated (::ffff:0:a.b.c.d), compatible (::a.b.c.d), NAT64
 * (64:ff9b::/96 and the local-use 64:ff9b:1::/48) and 6to4 (2002:AABB:CCDD::/48).
 */
function embeddedIpv4(b: Uint8Array): string | null {
  const zero = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  const v4 = (at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
  const word = (at: number) => (b[at]! << 8) | b[at + 1]!;
  if (zero(0, 10) && word(10) === 0xffff) return v4(12);
  if (zero(0, 8) && word(8) === 0xffff && zero(10, 12)) return v4(12);
  if (zero(0, 12)) return v4(12);
  if (word(0) === 0x64 && word(2) === 0xff9b && zero(4, 12)) return v4(12);
  if (word(0) === 0x64 && word(2) === 0xff9b && word(4) === 1) return v4(12);
  if (word(0) === 0x2002) return v4(2);
  return null;
}

/** True for an address on a private, loopback, link-local, multicast or reserved network. */
export function isForbiddenAddress(address: string): boolean {
  if (net.isIPv4(address)) return FORBIDDEN_V4.check(address, "ipv4");
  const bytes = ipv6Bytes(address);
  // Not an address in a standard spelling (`127.1`, `0x7f.0.0.1`): never connected to.
  if (!bytes) return true;
  const v4 = embeddedIpv4(bytes);
  if (v4 !== null && FORBIDDEN_V4.check(v4, "ipv4")) return true;
  const canonical = Array.from({ length: 8 }, (_, i) =>
    ((bytes[i * 2]! << 8) | bytes[i * 2 + 1]!).toString(16),
  ).join(":");
  return FORBIDDEN_V6.check(canonical, "ipv6");
}

/** Whether the policy lets an agent reach `host` (before any address check). */
export function hostAllowed(policy: NetworkPolicy, host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, "");
  switch (policy.kind) {
    case "model-only":
      return false;
    case "open":
      return true;
    case "hosts":
      return policy.hosts.some((p) => {
        const pattern = p.toLowerCase();
        return pattern.startsWith("*.") ? h.endsWith(pattern.slice(1)) : h === pattern;
      });
  }
}

/** In words, for a refusal: what the agent's setting allows. */
function describePolicy(policy: NetworkPolicy): string {
  switch (policy.kind) {
    case "model-only":
      return "this agent may reach the model API only (network: model-only)";
    case "open":
      return "this agent may reach public hosts only";
    case "hosts":
      return `this agent may reach only ${policy.hosts.join(", ")} (network in .github/tether.yml)`;
  }
}

export async function startEgress(opts: EgressOptions): Promise<Egress> {
  const forbidden = opts.forbidden ?? isForbiddenAddress;
  const ports = opts.ports ?? ALLOWED_PORTS;
  const lookup =
    opts.lookup ??
    (async (host: string) => (await dns.lookup(host, { all: true })).map((a) => a.address));
  const stats: EgressStats = {
    modelRequests: 0,
    spentUsd: 0,
    modelRefused: [],
    allowed: {},
    refused: [],
    mcpRequests: {},
  };
  const sockets = new Set<Duplex>();
  const log = opts.log;

  const refuse = (host: string, reason: string) => {
    stats.refused.push({ host, reason });
    if (stats.refused.length > 50) stats.refused.shift();
    log.info({ host, reason }, "sandbox egress refused");
  };

  /** Checks a forward-proxy target; returns the address to connect to, or why not. */
  const resolveTarget = async (
    host: string,
    port: number,
  ): Promise<{ ok: true; address: string } | { ok: false; reason: string }> => {
    if (!ports.has(port)) return { ok: false, reason: `port ${port} is not 80 or 443` };
    if (!hostAllowed(opts.network, host))
      return { ok: false, reason: describePolicy(opts.network) };
    let addresses: string[];
    try {
      addresses = net.isIP(host) ? [host] : await lookup(host);
    } catch {
      return { ok: false, reason: `${host} does not resolve` };
    }
    const usable = addresses.filter((a) => !forbidden(a));
    if (usable.length === 0)
      return { ok: false, reason: `${host} resolves to a private or local address` };
    return { ok: true, address: usable[0]! };
  };

  const server = http.createServer((req, res) => {
    const url = req.url ?? "/";
    const mcp = mcpTarget(opts.mcpRemotes, url);
    if (mcp) return void toMcp(req, res, mcp);
    if (url.startsWith("/")) return void forwardToModel(req, res, url);
    // Absolute form: a plain-http forward-proxy request (or the model API asked through the
    // proxy by a client that ignores NO_PROXY).
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      res.writeHead(400, { "content-type": "text/plain" }).end("bad request target\n");
      return;
    }
    if (isSelf(target)) {
      const mcp = mcpTarget(opts.mcpRemotes, target.pathname + target.search);
      if (mcp) return void toMcp(req, res, mcp);
      return void forwardToModel(req, res, target.pathname + target.search);
    }
    if (target.protocol !== "http:") {
      res.writeHead(400, { "content-type": "text/plain" }).end("use CONNECT for https\n");
      return;
    }
    void forwardPlain(req, res, target);
  });

  const toMcp = (req: http.IncomingMessage, res: http.ServerResponse, target: McpTarget) => {
    stats.mcpRequests[target.name] = (stats.mcpRequests[target.name] ?? 0) + 1;
    forwardToMcp(req, res, target, log);
  };

  const isSelf = (u: URL) =>
    (u.hostname === "127.0.0.1" || u.hostname === "localhost") &&
    Number(u.port || 80) === EGRESS_PORT;

  /** Why a request for the model API is not forwarded, or null when it is a model call. */
  const modelRefusal = (method: string, target: string): string | null => {
    const q = target.indexOf("?");
    const p = q < 0 ? target : target.slice(0, q);
    const query = q < 0 ? "" : target.slice(q + 1);
    const route = opts.model.routes.find(
      (r) => r.method === method && (r.pattern ? r.pattern.test(p) : r.path === p),
    );
    const allowed = opts.model.routes.map((r) => `${r.method} ${r.path}`).join(", ");
    if (!route || !(route.queries ?? [""]).includes(query))
      return `Tether's sandbox forwards only the model call (${allowed || "none"}), not ${method} ${target}`;
    if (opts.budgetUsd !== undefined && stats.spentUsd >= opts.budgetUsd) {
      opts.onOverBudget?.(stats.spentUsd);
      return `this turn has spent $${stats.spentUsd.toFixed(4)} on the model API, at or over its limit of $${opts.budgetUsd}`;
    }
    return null;
  };

  const refuseModel = (
    res: http.ServerResponse,
    method: string,
    target: string,
    reason: string,
    status = 403,
  ) => {
    stats.modelRefused.push({ method, target: target.slice(0, 200), reason });
    if (stats.modelRefused.length > 50) stats.modelRefused.shift();
    log.info({ method, target: target.slice(0, 200), reason }, "sandbox model request refused");
    // The refusal in the API's own error shape, so a client says what it was told.
    const api = opts.model.meter?.api;
    const type = status === 413 ? "request_too_large" : "permission_error";
    const body =
      api === "openai"
        ? { error: { message: reason, type, code: "tether_refused" } }
        : api === "google"
          ? {
              error: {
                code: status,
                message: reason,
                status: status === 413 ? "INVALID_ARGUMENT" : "PERMISSION_DENIED",
              },
            }
          : { type: "error", error: { type, message: reason } };
    res
      .writeHead(status, { "content-type": "application/json", connection: "close" })
      .end(JSON.stringify(body));
  };

  const maxModelCalls = opts.maxModelCalls ?? 8;
  const maxBody = opts.maxModelBodyBytes ?? MAX_MODEL_BODY_BYTES;
  const ruleContext = { serverTools: opts.serverTools ?? [], ownResponseIds: new Set<string>() };
  let modelCalls = 0;

  /**
   * The whole body of a model call, or why it cannot be read: too large (checked as it streams
   * in, so no more than the limit is ever held), compressed, or not JSON.
   */
  const readModelBody = (
    req: http.IncomingMessage,
  ): Promise<{ ok: true; body: unknown } | { ok: false; status: number; reason: string }> =>
    new Promise((resolve) => {
      const tooLarge = {
        ok: false as const,
        status: 413,
        reason: `Tether's sandbox refused this model call: its body is larger than ${maxBody} bytes`,
      };
      const encoding = String(req.headers["content-encoding"] ?? "identity").toLowerCase();
      if (encoding !== "identity") {
        req.resume();
        return resolve({
          ok: false,
          status: 403,
          reason: `Tether's sandbox refused this model call: its body is encoded (${encoding.slice(0, 40)}); the proxy reads only plain JSON`,
        });
      }
      if (Number(req.headers["content-length"] ?? 0) > maxBody) {
        req.resume();
        return resolve(tooLarge);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let done = false;
      req.on("data", (c: Buffer) => {
        if (done) return;
        size += c.length;
        if (size > maxBody) {
          done = true;
          chunks.length = 0;
          return resolve(tooLarge);
        }
        chunks.push(c);
      });
      req.on("end", () => {
        if (done) return;
        done = true;
        // No body at all (a GET route): nothing to parse; the rules decide whether that is one.
        if (size === 0) return resolve({ ok: true, body: undefined });
        try {
          resolve({ ok: true, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
        } catch {
          resolve({
            ok: false,
            status: 403,
            reason: "Tether's sandbox refused this model call: its body is not JSON",
          });
        }
      });
      const cutOff = () => {
        if (done) return;
        done = true;
        resolve({ ok: false, status: 400, reason: "the model call's body was cut off" });
      };
      req.on("error", cutOff);
      // A client gone before its body ended: nothing to forward (its slot frees with `res`).
      req.on("close", () => {
        if (!req.complete) cutOff();
      });
    });

  const forwardToModel = (req: http.IncomingMessage, res: http.ServerResponse, path: string) => {
    const method = req.method ?? "GET";
    const refusal = modelRefusal(method, path);
    if (refusal !== null) {
      req.resume();
      return refuseModel(res, method, path, refusal);
    }
    if (modelCalls >= maxModelCalls) {
      req.resume();
      const message = `Tether's sandbox allows ${maxModelCalls} model calls at once`;
      const api = opts.model.meter?.api;
      const body =
        api === "openai"
          ? { error: { message, type: "rate_limit_error", code: "tether_concurrency" } }
          : api === "google"
            ? { error: { code: 429, message, status: "RESOURCE_EXHAUSTED" } }
            : { type: "error", error: { type: "rate_limit_error", message } };
      res
        .writeHead(429, { "content-type": "application/json", "retry-after": "1" })
        .end(JSON.stringify(body));
      return;
    }
    modelCalls++;
    res.once("close", () => modelCalls--);
    void readModelBody(req).then((read) => {
      if (!read.ok) return refuseModel(res, method, path, read.reason, read.status);
      const refusal = modelCallRefusal(
        opts.model.rules,
        { body: read.body, headers: req.headers },
        ruleContext,
      );
      if (refusal !== null) return refuseModel(res, method, path, refusal);
      forwardModelCall(req, res, path, read.body);
    });
  };

  /** Sends a checked model call upstream and meters its answer. */
  const forwardModelCall = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
    body: unknown,
  ) => {
    stats.modelRequests++;
    const meter = opts.model.meter;
    const payload =
      body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body), "utf8");
    // The request's model, should the answer not name one (Gemini names it in the path).
    const asked = (body as { model?: unknown } | undefined)?.model;
    const requestModel = typeof asked === "string" && asked ? asked.slice(0, 200) : null;
    const up = opts.model.upstream;
    const base = up.pathname.replace(/\/+$/, "");
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      const n = name.toLowerCase();
      if (HOP_BY_HOP.has(n) || n === "host" || opts.model.strip.includes(n)) continue;
      if (value !== undefined) headers[n] = value;
    }
    for (const [name, value] of Object.entries(opts.model.headers))
      headers[name.toLowerCase()] = value;
    headers.host = up.host;
    delete headers["content-length"];
    delete headers["content-encoding"];
    if (body !== undefined) headers["content-length"] = String(payload.length);
    const client = up.protocol === "https:" ? https : http;
    const outgoing = client.request(
      {
        protocol: up.protocol,
        hostname: up.hostname,
        port: up.port || (up.protocol === "https:" ? 443 : 80),
        method: req.method,
        path: `${base}${path}`,
        headers,
      },
      (upstream) => {
        const back: http.OutgoingHttpHeaders = {};
        for (const [name, value] of Object.entries(upstream.headers)) {
          if (!HOP_BY_HOP.has(name.toLowerCase()) && value !== undefined) back[name] = value;
        }
        res.writeHead(upstream.statusCode ?? 502, back);
        if (meter) {
          let callUsd = 0;
          const reader = new ResponseMeter(
            meter.api,
            upstream.headers["content-type"],
            requestModel,
            (usage) => {
              const usd = meter.costUsd(usage);
              if (!(usd > callUsd)) return;
              stats.spentUsd += usd - callUsd;
              callUsd = usd;
              opts.onSpend?.(stats.spentUsd);
            },
            (id) => ruleContext.ownResponseIds.add(id),
          );
          upstream.on("data", (c: Buffer) => reader.push(c));
          upstream.on("end", () => reader.end());
        }
        upstream.pipe(res);
        upstream.on("error", () => res.destroy());
      },
    );
    outgoing.on("error", (err) => {
      log.warn(
        { err: err.message, upstream: up.origin },
        "model API unreachable from the egress proxy",
      );
      if (!res.headersSent) {
        res.writeHead(502, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            type: "error",
            error: {
              type: "api_error",
              message: `Tether could not reach the model API: ${err.message}`,
            },
          }),
        );
      } else res.destroy();
    });
    outgoing.end(payload);
  };

  const forwardPlain = async (req: http.IncomingMessage, res: http.ServerResponse, target: URL) => {
    const port = Number(target.port || 80);
    // An IPv6 literal comes bracketed (`[::1]`); the checks and the connection want it bare.
    const host = target.hostname.replace(/^\[(.*)\]$/, "$1");
    const checked = await resolveTarget(host, port);
    if (!checked.ok) {
      refuse(host, checked.reason);
      res.writeHead(403, { "content-type": "text/plain" });
      res.end(`Tether's sandbox refused ${host}: ${checked.reason}\n`);
      return;
    }
    stats.allowed[host] = (stats.allowed[host] ?? 0) + 1;
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.has(name.toLowerCase()) && value !== undefined) headers[name] = value;
    }
    const outgoing = http.request(
      {
        host: checked.address,
        port,
        method: req.method,
        path: target.pathname + target.search,
        headers,
      },
      (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, upstream.headers);
        upstream.pipe(res);
      },
    );
    outgoing.on("error", () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(outgoing);
  };

  server.on("connect", (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    void (async () => {
      const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(req.url ?? "");
      if (!m) {
        client.end("HTTP/1.1 400 Bad Request\r\n\r\n");
        return;
      }
      const host = m[1]!;
      const checked = await resolveTarget(host, Number(m[2]));
      if (!checked.ok) {
        refuse(host, checked.reason);
        const body = `Tether's sandbox refused ${host}: ${checked.reason}\n`;
        client.end(
          `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        return;
      }
      stats.allowed[host] = (stats.allowed[host] ?? 0) + 1;
      const upstream = net.connect({ host: checked.address, port: Number(m[2]) });
      sockets.add(upstream);
      upstream.on("close", () => sockets.delete(upstream));
      upstream.once("connect", () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        if (head.length) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on("error", () => {
        if (!client.destroyed) client.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
      });
    })();
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("clientError", (_err, s) => s.destroy());

  await listenOnSocket(server, opts.socketPath);

  return {
    socketPath: opts.socketPath,
    stats: () => structuredClone(stats),
    close: async () => {
      for (const s of sockets) s.destroy();
      await closeSocket(server, opts.socketPath);
    },
  };
}
