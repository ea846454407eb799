import { createHash } from "node:crypto";
import type http from "node:http";
import type { FakeModel, FakeModelOptions } from "./fake-model-server.js";
import { scriptedFake, startScriptedServer, usageOf } from "./fake-model-server.js";

/**
 * A fake Anthropic Messages API on 127.0.0.1 that the real Claude Code CLI can talk to
 * (ANTHROPIC_BASE_URL). It answers the way claude-cli-facts.md describes: `HEAD /`, and
 * `POST /v1/messages?beta=true` as server-sent events. It keeps every request so tests can
 * prove a resume (the earlier messages were sent again) and read what the model was asked.
 */

/** One scripted answer to one `POST /v1/messages`. */
export type FakeReply =
  | {
      kind: "text";
      text: string;
    }
  | {
      /** An assistant turn that calls a tool; the CLI runs it and asks again with the result. */
      kind: "tool_use";
      name: string;
      input: Record<string, unknown>;
      id: string;
      /** Text the model says before the call, if any. */
      text?: string;
    }
  | {
      /** An HTTP error with the API's JSON error body. */
      kind: "error";
      status: number;
      errorType: string;
      message: string;
    }
  | {
      /** Accept the request and never answer; the socket is destroyed by close(). */
      kind: "hang";
    }
  | {
      /** Start the stream (message_start) and then go silent. */
      kind: "hang_after_start";
    }
  | {
      /** Hold the answer until `until` settles, then answer `then` (a test acts meanwhile). */
      kind: "deferred";
      until: Promise<unknown>;
      then: Exclude<FakeReply, { kind: "deferred" }>;
    };

let toolIds = 0;

/** Builders for the replies tests script. */
export const replies = {
  text: (text: string): FakeReply => ({ kind: "text", text }),
  toolUse: (name: string, input: Record<string, unknown>, text?: string): FakeReply => ({
    kind: "tool_use",
    name,
    input,
    id: `toolu_fake${String(++toolIds).padStart(6, "0")}`,
    ...(text === undefined ? {} : { text }),
  }),
  /** A Bash tool call that echoes `word` (and writes nothing), so "a tool ran" can be tested. */
  bashEcho: (word: string): FakeReply =>
    replies.toolUse("Bash", { command: `echo ${word}`, description: `Echo ${word}` }),
  /** The API's real answer to an over-long prompt: 400 invalid_request_error. */
  promptTooLong: (tokens = 210_000, limit = 200_000): FakeReply => ({
    kind: "error",
    status: 400,
    errorType: "invalid_request_error",
    message: `prompt is too long: ${tokens} tokens > ${limit} maximum`,
  }),
  /** Another 400 the API gives for a history it will not take. */
  invalidRequest: (message: string): FakeReply => ({
    kind: "error",
    status: 400,
    errorType: "invalid_request_error",
    message,
  }),
  unauthorized: (): FakeReply => ({
    kind: "error",
    status: 401,
    errorType: "authentication_error",
    message: "invalid x-api-key",
  }),
  forbidden: (): FakeReply => ({
    kind: "error",
    status: 403,
    errorType: "permission_error",
    message: "Your API key does not have permission to use the specified resource.",
  }),
  overloaded: (): FakeReply => ({
    kind: "error",
    status: 529,
    errorType: "overloaded_error",
    message: "Overloaded",
  }),
  hang: (): FakeReply => ({ kind: "hang" }),
  /** `then`, once `until` settles: the CLI waits on the API while the test does something. */
  deferred: (until: Promise<unknown>, then: FakeReply): FakeReply => {
    if (then.kind === "deferred") throw new Error("a deferred reply cannot defer again");
    return { kind: "deferred", until, then };
  },
  hangAfterStart: (): FakeReply => ({ kind: "hang_after_start" }),
};

/** What the fake recorded about one request. */
export interface FakeRequest {
  /** 1-based position among all requests this server received (HEAD included). */
  n: number;
  method: string;
  /** Path without the query string. */
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** Size of the request body as sent, in bytes. */
  rawBytes: number;
  /** The parsed JSON body, or undefined when there was none or it was not JSON. */
  body: MessagesBody | undefined;
  /** Date.now() when the body had arrived. */
  time: number;
  /** The reply the fake chose (messages requests only). */
  reply?: FakeReply["kind"];
  /** The usage the fake reported (messages requests only). */
  usage?: FakeUsage;
}

/** The part of a Messages API request body the fake looks at; everything else is kept as sent. */
export interface MessagesBody {
  model?: string;
  stream?: boolean;
  system?: string | Array<{ type: string; text?: string; cache_control?: unknown }>;
  tools?: Array<Record<string, unknown>>;
  messages?: Array<{ role: string; content: string | Array<Record<string, unknown>> }>;
  [key: string]: unknown;
}

export interface FakeUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/**
 * The default reply is a text that says which request this was and how many messages it
 * carried, `reply#N seen_messages=M` (as in the recorded fixtures). "simulated" usage estimates
 * 4 bytes a token and models the prompt cache: a prefix up to a `cache_control` breakpoint that
 * an earlier request wrote is read from cache, the rest up to the last breakpoint is written to it.
 */
export type FakeAnthropicOptions = FakeModelOptions<FakeRequest, FakeReply, FakeUsage>;

/** The fake as a test holds it (fake-model-server.ts); `url` is for ANTHROPIC_BASE_URL, e.g. http://127.0.0.1:41234. */
export interface FakeAnthropic extends FakeModel<FakeRequest, FakeReply> {
  /** The `POST /v1/messages` requests only. */
  messageRequests(): FakeRequest[];
}

export async function startFakeAnthropic(opts: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const cache = new PromptCache();

  const usageFor = usageOf(opts, (req: FakeRequest, reply: FakeReply): FakeUsage => {
    const outputText =
      reply.kind === "text"
        ? reply.text
        : reply.kind === "tool_use"
          ? (reply.text ?? "") + JSON.stringify(reply.input)
          : "";
    return {
      ...cache.account(req.body ?? {}),
      output_tokens: Math.max(1, Math.ceil(outputText.length / 4)),
    };
  });

  const server = await startScriptedServer<FakeRequest, FakeReply>({
    name: "fake Anthropic",
    ...(opts.port === undefined ? {} : { port: opts.port }),
    defaultReply:
      opts.defaultReply ??
      ((req) => replies.text(`reply#${req.n} seen_messages=${req.body?.messages?.length ?? 0}`)),
    record: (n, { req, url, raw, json }) => ({
      n,
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      rawBytes: raw?.length ?? 0,
      body: json as MessagesBody | undefined,
      time: Date.now(),
    }),
    answer: (record, res, server) => {
      if (record.method === "POST" && record.path === "/v1/messages") {
        const first = server.next(record);
        record.reply = first.kind;
        const respond = (reply: Exclude<FakeReply, { kind: "deferred" }>) => {
          if (reply.kind !== "error" && reply.kind !== "hang")
            record.usage = usageFor(record, reply);
          const answer = () => answerMessages(res, record, reply);
          if (opts.latencyMs) setTimeout(answer, opts.latencyMs);
          else answer();
        };
        if (first.kind === "deferred") {
          const settle = () => respond(first.then);
          first.until.then(settle, settle);
        } else respond(first);
      } else if (record.method === "POST" && record.path === "/v1/messages/count_tokens") {
        sendJson(res, 200, { input_tokens: Math.ceil(record.rawBytes / 4) });
      } else if (record.method === "HEAD" || record.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(record.method === "HEAD" ? undefined : "{}");
      } else {
        sendJson(res, 404, {
          type: "error",
          error: { type: "not_found_error", message: `Not found: ${record.path}` },
        });
      }
    },
  });
  const { requests } = server;

  return {
    ...scriptedFake(server),
    url: `http://127.0.0.1:${server.port}`,
    messageRequests: () => requests.filter((r) => r.method === "POST" && r.path === "/v1/messages"),
  };
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "request-id": `req_fake${Date.now()}`,
  });
  res.end(text);
}

let messageIds = 0;

function answerMessages(
  res: http.ServerResponse,
  req: FakeRequest,
  reply: Exclude<FakeReply, { kind: "deferred" }>,
): void {
  if (reply.kind === "hang") return;
  if (reply.kind === "error") {
    // The API's error shape: {"type":"error","error":{"type":…,"message":…},"request_id":…}
    sendJson(res, reply.status, {
      type: "error",
      error: { type: reply.errorType, message: reply.message },
      request_id: `req_fake${req.n}`,
    });
    return;
  }
  const usage = req.usage ?? {
    input_tokens: 0,
    output_tokens: 1,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  };
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "request-id": `req_fake${req.n}`,
  });
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send("message_start", {
    message: {
      id: `msg_fake${String(++messageIds).padStart(6, "0")}`,
      type: "message",
      role: "assistant",
      model: req.body?.model ?? "claude-sonnet-4-5",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  if (reply.kind === "hang_after_start") return;
  send("ping", {});
  let index = 0;
  const text = reply.kind === "text" ? reply.text : reply.text;
  if (text !== undefined) {
    send("content_block_start", { index, content_block: { type: "text", text: "" } });
    // Two deltas, as the API streams text in pieces.
    const cut = Math.ceil(text.length / 2);
    for (const piece of [text.slice(0, cut), text.slice(cut)]) {
      if (piece) send("content_block_delta", { index, delta: { type: "text_delta", text: piece } });
    }
    send("content_block_stop", { index });
    index++;
  }
  if (reply.kind === "tool_use") {
    send("content_block_start", {
      index,
      content_block: { type: "tool_use", id: reply.id, name: reply.name, input: {} },
    });
    send("content_block_delta", {
      index,
      delta: { type: "input_json_delta", partial_json: JSON.stringify(reply.input) },
    });
    send("content_block_stop", { index });
  }
  send("message_delta", {
    delta: {
      stop_reason: reply.kind === "tool_use" ? "tool_use" : "end_turn",
      stop_sequence: null,
    },
    usage: { output_tokens: usage.output_tokens },
  });
  send("message_stop", {});
  res.end();
}

/**
 * A small model of the API's prompt cache, so usage figures behave like the real ones: the
 * request is cut into blocks (tools, system blocks, message content blocks, with cache_control
 * markers stripped and string content read as one text block, since the API caches on content);
 * a prefix ending at a breakpoint is written, and a later request whose blocks start with a
 * written prefix reads it.
 */
class PromptCache {
  private readonly written = new Set<string>();

  account(body: MessagesBody): Omit<FakeUsage, "output_tokens"> {
    const blocks = toBlocks(body);
    let hash = createHash("sha256")
      .update(body.model ?? "")
      .digest("hex");
    let bytes = 0;
    const prefixes: Array<{ hash: string; bytes: number; breakpoint: boolean }> = [];
    for (const block of blocks) {
      hash = createHash("sha256").update(hash).update(block.text).digest("hex");
      bytes += Buffer.byteLength(block.text);
      prefixes.push({ hash, bytes, breakpoint: block.breakpoint });
    }
    const lastBreakpoint = prefixes.findLastIndex((p) => p.breakpoint);
    let readBytes = 0;
    for (let i = lastBreakpoint; i >= 0; i--) {
      const prefix = prefixes[i];
      if (prefix && this.written.has(prefix.hash)) {
        readBytes = prefix.bytes;
        break;
      }
    }
    const cachedEnd = lastBreakpoint >= 0 ? (prefixes[lastBreakpoint]?.bytes ?? 0) : 0;
    for (const p of prefixes) if (p.breakpoint) this.written.add(p.hash);
    const tokens = (n: number) => Math.ceil(n / 4);
    return {
      cache_read_input_tokens: tokens(readBytes),
      cache_creation_input_tokens: tokens(Math.max(0, cachedEnd - readBytes)),
      input_tokens: Math.max(1, tokens(bytes - Math.max(cachedEnd, readBytes))),
    };
  }
}

function toBlocks(body: MessagesBody): Array<{ text: string; breakpoint: boolean }> {
  const out: Array<{ text: string; breakpoint: boolean }> = [];
  const push = (value: unknown, prefix: string) => {
    if (typeof value === "string") {
      out.push({
        text: `${prefix}${JSON.stringify({ type: "text", text: value })}`,
        breakpoint: false,
      });
      return;
    }
    const { cache_control, ...rest } = value as Record<string, unknown>;
    out.push({ text: `${prefix}${JSON.stringify(rest)}`, breakpoint: cache_control !== undefined });
  };
  for (const tool of body.tools ?? []) push(tool, "tool:");
  if (typeof body.system === "string") push(body.system, "system:");
  else for (const block of body.system ?? []) push(block, "system:");
  for (const message of body.messages ?? []) {
    if (typeof message.content === "string") push(message.content, `${message.role}:`);
    else for (const block of message.content) push(block, `${message.role}:`);
  }
  return out;
}

/** The text of the last user message of a messages request (all its text blocks, joined). */
export function lastUserText(req: FakeRequest): string {
  const messages = req.body?.messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role !== "user") continue;
    if (typeof message.content === "string") return message.content;
    return message.content
      .map((block) => (block.type === "text" && typeof block.text === "string" ? block.text : ""))
      .join("");
  }
  return "";
}

/** Every text the user sent in a messages request, oldest first (to prove a resume). */
export function userTexts(req: FakeRequest): string[] {
  return (req.body?.messages ?? [])
    .filter((m) => m.role === "user")
    .map((m) =>
      typeof m.content === "string"
        ? m.content
        : m.content
            .map((block) =>
              block.type === "text" && typeof block.text === "string" ? block.text : "",
            )
            .join(""),
    );
}
