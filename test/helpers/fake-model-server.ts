import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import zlib from "node:zlib";

/**
 * The core every fake model API here shares (fake-anthropic.ts, fake-openai.ts, fake-gemini.ts;
 * opencode talks to the Anthropic one): an HTTP server on 127.0.0.1 that keeps every request in
 * order, answers from a script of replies (then a default), lets a test wait until the requests
 * say something, and on close destroys every open connection, hanging ones included. Each fake
 * is a dialect on it: what it records of a request, and how it answers.
 */

/** One request as it arrived, before a dialect records it. */
export interface Incoming {
  req: http.IncomingMessage;
  url: URL;
  /** The body's bytes (decoded when the server decodes; undefined: an encoding it cannot read). */
  raw: Buffer | undefined;
  /** The body parsed as JSON; undefined when there was none or it was not JSON. */
  json: unknown;
}

export interface ScriptedServer<Req, Reply> {
  port: number;
  /** Every request received, in order. */
  requests: Req[];
  /** The reply for `req`: the next scripted one, else the default's. */
  next(req: Req): Reply;
  /** Queue one-shot replies, used by the next requests that take one, in order. */
  script(...replies: Reply[]): void;
  /** Replace the answer used when the script is empty. */
  setDefault(reply: Reply | ((req: Req) => Reply)): void;
  /** Replies still queued. */
  pending(): number;
  /** Drops queued replies and restores the default answer (between tests). */
  reset(): void;
  /** Resolves once `predicate` holds for the requests received; rejects after timeoutMs. */
  waitFor(predicate: (reqs: Req[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Stops listening and destroys every open connection (hanging ones included). */
  close(): Promise<void>;
}

/** What a fake gives a test of the core: all of it but the port (its `url` says it) and `next`. */
type ScriptedFake<Req, Reply> = Omit<ScriptedServer<Req, Reply>, "port" | "next">;

/** A fake model API as a test holds it: the scripted server's core and the URL to point a CLI at. */
export interface FakeModel<Req, Reply> extends ScriptedFake<Req, Reply> {
  url: string;
}

/** What every fake model API takes; each fake says its default reply and how it simulates usage. */
export interface FakeModelOptions<Req, Reply, Usage> {
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** The answer when nothing is scripted (each fake has a default that names the request). */
  defaultReply?: (req: Req) => Reply;
  /** Token counts to report: "simulated" (default, the fake's own model) or decided per request. */
  usage?: "simulated" | ((req: Req, reply: Reply) => Usage);
  /** Delay before each model answer starts, in milliseconds. */
  latencyMs?: number;
}

/** The usage a fake reports: the test's function when it gave one, else the fake's simulation. */
export function usageOf<Req, Reply, Usage>(
  opts: Pick<FakeModelOptions<Req, Reply, Usage>, "usage">,
  simulated: (req: Req, reply: Reply) => Usage,
): (req: Req, reply: Reply) => Usage {
  const { usage } = opts;
  return typeof usage === "function" ? usage : simulated;
}

/** The parts of `server` a fake hands on as they are. */
export function scriptedFake<Req, Reply>(
  server: ScriptedServer<Req, Reply>,
): ScriptedFake<Req, Reply> {
  const { requests, script, setDefault, pending, reset, waitFor, close } = server;
  return { requests, script, setDefault, pending, reset, waitFor, close };
}

export async function startScriptedServer<Req, Reply extends object>(o: {
  /** How errors name the fake, e.g. "fake Anthropic". */
  name: string;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** Decode a gzip, deflate or br request body (content-encoding) before reading it. */
  decodeBody?: boolean;
  defaultReply: (req: Req) => Reply;
  /** What is kept of one request; `n` is its 1-based place among all this server received. */
  record(n: number, incoming: Incoming): Req;
  /** Answers one recorded request (it may take a reply with `server.next`). */
  answer(record: Req, res: http.ServerResponse, server: ScriptedServer<Req, Reply>): void;
}): Promise<ScriptedServer<Req, Reply>> {
  const requests: Req[] = [];
  const queue: Reply[] = [];
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  let fallback = o.defaultReply;
  let closed = false;

  const httpServer = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const bytes = Buffer.concat(chunks);
      const raw = o.decodeBody ? decode(bytes, req.headers["content-encoding"]) : bytes;
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      let json: unknown;
      if (raw && raw.length > 0) {
        try {
          json = JSON.parse(raw.toString("utf8"));
        } catch {
          json = undefined;
        }
      }
      const record = o.record(requests.length + 1, { req, url, raw, json });
      requests.push(record);
      try {
        o.answer(record, res, server);
      } finally {
        for (const wake of [...waiters]) wake();
      }
    });
  });
  httpServer.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(o.port ?? 0, "127.0.0.1", () => resolve());
  });
  const { port } = httpServer.address() as AddressInfo;

  const server: ScriptedServer<Req, Reply> = {
    port,
    requests,
    next: (req) => queue.shift() ?? fallback(req),
    script: (...more) => void queue.push(...more),
    setDefault: (reply) => {
      fallback = typeof reply === "function" ? reply : () => reply;
    },
    pending: () => queue.length,
    reset: () => {
      queue.length = 0;
      fallback = o.defaultReply;
    },
    waitFor: (predicate, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        if (predicate(requests)) return resolve();
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${o.name}: condition not met within ${timeoutMs} ms`));
        }, timeoutMs);
        const check = () => {
          if (!predicate(requests)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
      }),
    close: async () => {
      if (closed) return;
      closed = true;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
  return server;
}

/** The body as sent, decoded by its content-encoding; undefined: an encoding not read here. */
function decode(raw: Buffer, encoding: string | undefined): Buffer | undefined {
  try {
    switch (encoding) {
      case undefined:
      case "identity":
        return raw;
      case "gzip":
        return zlib.gunzipSync(raw);
      case "deflate":
        return zlib.inflateSync(raw);
      case "br":
        return zlib.brotliDecompressSync(raw);
      case "zstd": {
        // Node 22.15+ has zstd; on older Node the body is recorded as unreadable.
        const zstd = (zlib as unknown as { zstdDecompressSync?: (b: Buffer) => Buffer })
          .zstdDecompressSync;
        return zstd ? zstd(raw) : undefined;
      }
      default:
        return undefined;
    }
  } catch {
    return undefined;
  }
}
