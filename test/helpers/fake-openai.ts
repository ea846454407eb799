import { createHash } from "node:crypto";
import type http from "node:http";
import type { FakeModel, FakeModelOptions } from "./fake-model-server.js";
import { scriptedFake, startScriptedServer, usageOf } from "./fake-model-server.js";

/**
 * A fake OpenAI Responses API on 127.0.0.1 that the real Codex CLI can talk to. It answers the
 * way codex-cli-facts.md describes: `POST /v1/responses` (always `stream: true` from Codex) as
 * server-sent events in the order the real API sends them, and JSON errors in the real API's
 * shape. It keeps every request so tests can prove a resume (the earlier turns were sent again
 * in `input`; Codex sends `store: false` and no `previous_response_id`) and read what the model
 * was asked and what a tool call returned.
 *
 * Point Codex at it with a custom model provider (`codexProviderArgs`): the built-in `openai`
 * provider ignores OPENAI_BASE_URL, and with `openai_base_url` it first tries WebSockets for
 * about 6 seconds before it falls back to HTTP.
 */

/** One scripted answer to one `POST /v1/responses`. */
export type FakeReply =
  | {
      kind: "text";
      text: string;
      /** A reasoning summary streamed before the text (Codex prints it as a `reasoning` item). */
      reasoning?: string;
    }
  | {
      /**
       * A function call (`type: "function_call"`); Codex runs it and asks again with a
       * `function_call_output` item carrying the same call_id. Codex's shell tool is the
       * function `exec_command` with arguments `{cmd, workdir?, yield_time_ms?, ...}`.
       */
      kind: "function_call";
      name: string;
      /** The tool's namespace (an MCP server's tools come as namespace `mcp__<server>`). */
      namespace?: string;
      arguments: Record<string, unknown>;
      callId: string;
      /** Text the model says before the call, if any. */
      text?: string;
    }
  | {
      /**
       * A freeform tool call (`type: "custom_tool_call"`), e.g. `apply_patch` with a patch as
       * its input; Codex answers with a `custom_tool_call_output` item.
       */
      kind: "custom_tool_call";
      name: string;
      input: string;
      callId: string;
    }
  | {
      /** An HTTP error with the API's JSON error body. */
      kind: "error";
      status: number;
      errorType: string;
      code: string | null;
      message: string;
      param?: string | null;
      /** Extra response headers, e.g. `retry-after`. */
      headers?: Record<string, string>;
    }
  | {
      /** A 200 stream that ends in `response.failed` with this error (how a stream fails). */
      kind: "failed";
      code: string;
      message: string;
    }
  | {
      /** Accept the request and never answer; the socket is destroyed by close(). */
      kind: "hang";
    }
  | {
      /** Start the stream (`response.created`) and then go silent. */
      kind: "hang_after_created";
    };

let callIds = 0;

/** The API's words for a context overflow (openai/codex maps code context_length_exceeded). */
export const CONTEXT_OVERFLOW_MESSAGE =
  "Your input exceeds the context window of this model. Please adjust your input and try again.";

/** Builders for the replies tests script. */
export const replies = {
  text: (text: string, reasoning?: string): FakeReply => ({
    kind: "text",
    text,
    ...(reasoning === undefined ? {} : { reasoning }),
  }),
  functionCall: (name: string, args: Record<string, unknown>, text?: string): FakeReply => ({
    kind: "function_call",
    name,
    arguments: args,
    callId: `call_fake${String(++callIds).padStart(6, "0")}`,
    ...(text === undefined ? {} : { text }),
  }),
  /** A call of a tool in a namespace (an MCP server's, `mcp__<server>`). */
  namespacedCall: (namespace: string, name: string, args: Record<string, unknown>): FakeReply => ({
    kind: "function_call",
    namespace,
    name,
    arguments: args,
    callId: `call_fake${String(++callIds).padStart(6, "0")}`,
  }),
  /** Codex's shell tool: `exec_command` runs `cmd` with the user's shell (`bash -lc`). */
  shell: (cmd: string, extra: Record<string, unknown> = {}): FakeReply =>
    replies.functionCall("exec_command", { cmd, ...extra }),
  /** Codex's file editing tool, a freeform `apply_patch` call. */
  applyPatch: (patch: string): FakeReply => ({
    kind: "custom_tool_call",
    name: "apply_patch",
    input: patch,
    callId: `call_fake${String(++callIds).padStart(6, "0")}`,
  }),
  /** The API's answer to an over-long input: HTTP 400, code context_length_exceeded. */
  contextOverflow: (): FakeReply => ({
    kind: "error",
    status: 400,
    errorType: "invalid_request_error",
    code: "context_length_exceeded",
    param: "input",
    message: CONTEXT_OVERFLOW_MESSAGE,
  }),
  /** The same overflow reported inside a started stream, as `response.failed`. */
  contextOverflowStreamed: (): FakeReply => ({
    kind: "failed",
    code: "context_length_exceeded",
    message: CONTEXT_OVERFLOW_MESSAGE,
  }),
  /** Another 400 the API gives for a request it will not take. */
  invalidRequest: (message: string, code: string | null = null): FakeReply => ({
    kind: "error",
    status: 400,
    errorType: "invalid_request_error",
    code,
    message,
  }),
  unauthorized: (): FakeReply => ({
    kind: "error",
    status: 401,
    errorType: "invalid_request_error",
    code: "invalid_api_key",
    param: null,
    message:
      "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.",
  }),
  /**
   * 429 rate_limit_exceeded. With `retryAfterSeconds` the answer carries a `retry-after`
   * header, and Codex then retries (5 stream retries, each after that delay); without it
   * Codex gives up at once.
   */
  rateLimited: (retryAfterSeconds?: number): FakeReply => ({
    kind: "error",
    status: 429,
    errorType: "tokens",
    code: "rate_limit_exceeded",
    param: null,
    message: `Rate limit reached for gpt-5.5 in organization org-fake on tokens per min (TPM): Limit 30000, Used 30000, Requested 1000. Please try again in ${retryAfterSeconds ?? 2}s.`,
    ...(retryAfterSeconds === undefined
      ? {}
      : { headers: { "retry-after": String(retryAfterSeconds) } }),
  }),
  quotaExceeded: (): FakeReply => ({
    kind: "error",
    status: 429,
    errorType: "insufficient_quota",
    code: "insufficient_quota",
    param: null,
    message: "You exceeded your current quota, please check your plan and billing details.",
  }),
  serverError: (): FakeReply => ({
    kind: "error",
    status: 500,
    errorType: "server_error",
    code: null,
    param: null,
    message: "The server had an error while processing your request. Sorry about that!",
  }),
  hang: (): FakeReply => ({ kind: "hang" }),
  hangAfterCreated: (): FakeReply => ({ kind: "hang_after_created" }),
};

/** What the fake recorded about one request. */
export interface FakeRequest {
  /** 1-based position among all requests this server received. */
  n: number;
  method: string;
  /** Path without the query string. */
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** Size of the request body as sent (after any content-encoding), in bytes. */
  rawBytes: number;
  /** The parsed JSON body, or undefined when there was none or it was not JSON. */
  body: ResponsesBody | undefined;
  /** Date.now() when the body had arrived. */
  time: number;
  /** The reply the fake chose (responses requests only). */
  reply?: FakeReply["kind"];
  /** The usage the fake reported (responses requests only). */
  usage?: FakeUsage;
  /** The response id the fake gave it (responses requests only). */
  responseId?: string;
}

/** One item of a Responses API `input` (message, function_call, function_call_output, ...). */
export interface InputItem {
  type?: string;
  role?: string;
  content?: string | Array<{ type: string; text?: string; [key: string]: unknown }>;
  call_id?: string;
  name?: string;
  arguments?: string;
  input?: string;
  output?: unknown;
  [key: string]: unknown;
}

/** The part of a Responses API request body the fake looks at; the rest is kept as sent. */
export interface ResponsesBody {
  model?: string;
  stream?: boolean;
  store?: boolean;
  instructions?: string;
  previous_response_id?: string;
  prompt_cache_key?: string;
  tools?: Array<Record<string, unknown>>;
  input?: string | InputItem[];
  [key: string]: unknown;
}

/** Usage as the Responses API reports it in `response.completed`. */
export interface FakeUsage {
  /** Every input token, cached ones included. */
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens?: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/**
 * The default reply is a text that says which request this was and how many input items it
 * carried, `reply#N input_items=M`. "simulated" usage estimates 4 bytes a token and models the
 * API's automatic prompt cache: the longest prefix (tools, instructions, input items, in that
 * order) that an earlier request of the same model sent is cached, counted from 1024 tokens up
 * in steps of 128 as the API does.
 */
export type FakeOpenAIOptions = FakeModelOptions<FakeRequest, FakeReply, FakeUsage>;

/** The fake as a test holds it (fake-model-server.ts); `url` is for a model provider's `base_url`, e.g. http://127.0.0.1:41234/v1. */
export interface FakeOpenAI extends FakeModel<FakeRequest, FakeReply> {
  /** The `POST /v1/responses` requests only. */
  responseRequests(): FakeRequest[];
}

export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const cache = new PromptCache();

  const usageFor = usageOf(opts, (req: FakeRequest, reply: FakeReply): FakeUsage => {
    const outputText =
      reply.kind === "text"
        ? reply.text + (reply.reasoning ?? "")
        : reply.kind === "function_call"
          ? (reply.text ?? "") + JSON.stringify(reply.arguments)
          : reply.kind === "custom_tool_call"
            ? reply.input
            : "";
    const { input, cached } = cache.account(req.body ?? {});
    const reasoning = reply.kind === "text" && reply.reasoning ? tokens(reply.reasoning) : 0;
    const output = Math.max(1, tokens(outputText));
    return {
      input_tokens: input,
      input_tokens_details: { cached_tokens: cached, cache_write_tokens: 0 },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: reasoning },
      total_tokens: input + output,
    };
  });

  const server = await startScriptedServer<FakeRequest, FakeReply>({
    name: "fake OpenAI",
    ...(opts.port === undefined ? {} : { port: opts.port }),
    decodeBody: true,
    defaultReply:
      opts.defaultReply ??
      ((req) => replies.text(`reply#${req.n} input_items=${inputItems(req).length}`)),
    record: (n, { req, url, raw, json }) => ({
      n,
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      rawBytes: raw?.length ?? 0,
      body: json as ResponsesBody | undefined,
      time: Date.now(),
    }),
    answer: (record, res, server) => {
      if (record.method === "POST" && record.path === "/v1/responses") {
        const reply = server.next(record);
        record.reply = reply.kind;
        record.responseId = `resp_fake${String(record.n).padStart(6, "0")}`;
        if (reply.kind !== "error" && reply.kind !== "hang" && reply.kind !== "failed") {
          record.usage = usageFor(record, reply);
        }
        const answer = () => answerResponses(res, record, reply);
        if (opts.latencyMs) setTimeout(answer, opts.latencyMs);
        else answer();
      } else if (record.method === "GET" && record.path === "/v1/models") {
        sendJson(res, 200, {
          object: "list",
          data: [{ id: "gpt-5.5", object: "model", created: 1_700_000_000, owned_by: "openai" }],
        });
      } else {
        // Also the answer to a WebSocket upgrade on GET /v1/responses: Codex then falls back
        // to HTTP (after its retries), as it does against an API that has no WebSockets.
        sendJson(res, 404, {
          error: {
            message: `Unknown request URL: ${record.method} ${record.path}.`,
            type: "invalid_request_error",
            param: null,
            code: "unknown_url",
          },
        });
      }
    },
  });
  const { requests } = server;

  return {
    ...scriptedFake(server),
    url: `http://127.0.0.1:${server.port}/v1`,
    responseRequests: () =>
      requests.filter((r) => r.method === "POST" && r.path === "/v1/responses"),
  };
}

/**
 * The `-c` overrides that point Codex at a Responses API (this fake, or any other) as a custom
 * model provider: no WebSocket attempts, the key read from `envKey`. Retries default to
 * Codex's own (5 stream retries; see codex-cli-facts.md); pass 0 to fail at the first error.
 */
export function codexProviderArgs(
  baseUrl: string,
  opts: {
    id?: string;
    envKey?: string;
    requestMaxRetries?: number;
    streamMaxRetries?: number;
    streamIdleTimeoutMs?: number;
  } = {},
): string[] {
  const id = opts.id ?? "tether";
  const fields = [
    `name="Tether"`,
    `base_url=${JSON.stringify(baseUrl)}`,
    `env_key=${JSON.stringify(opts.envKey ?? "OPENAI_API_KEY")}`,
    `wire_api="responses"`,
    `supports_websockets=false`,
  ];
  if (opts.requestMaxRetries !== undefined)
    fields.push(`request_max_retries=${opts.requestMaxRetries}`);
  if (opts.streamMaxRetries !== undefined)
    fields.push(`stream_max_retries=${opts.streamMaxRetries}`);
  if (opts.streamIdleTimeoutMs !== undefined)
    fields.push(`stream_idle_timeout_ms=${opts.streamIdleTimeoutMs}`);
  return ["-c", `model_provider="${id}"`, "-c", `model_providers.${id}={${fields.join(",")}}`];
}

function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "x-request-id": `req_fake${Date.now()}`,
    ...headers,
  });
  res.end(text);
}

let itemIds = 0;
const nextId = (prefix: string) => `${prefix}_fake${String(++itemIds).padStart(6, "0")}`;

function answerResponses(res: http.ServerResponse, req: FakeRequest, reply: FakeReply): void {
  if (reply.kind === "hang") return;
  if (reply.kind === "error") {
    // The API's error shape: {"error":{"message","type","param","code"}}
    sendJson(
      res,
      reply.status,
      {
        error: {
          message: reply.message,
          type: reply.errorType,
          param: reply.param ?? null,
          code: reply.code,
        },
      },
      reply.headers,
    );
    return;
  }
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-request-id": `req_fake${req.n}`,
  });
  let sequence = 0;
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`,
    );
  const model = req.body?.model ?? "gpt-5.5";
  const response = (status: string, output: unknown[], extra: Record<string, unknown> = {}) => ({
    id: req.responseId,
    object: "response",
    created_at: Math.floor(req.time / 1000),
    status,
    model,
    output,
    parallel_tool_calls: req.body?.parallel_tool_calls ?? true,
    previous_response_id: null,
    store: req.body?.store ?? false,
    usage: null,
    ...extra,
  });
  send("response.created", { response: response("in_progress", []) });
  if (reply.kind === "hang_after_created") return;
  send("response.in_progress", { response: response("in_progress", []) });

  if (reply.kind === "failed") {
    send("response.failed", {
      response: response("failed", [], { error: { code: reply.code, message: reply.message } }),
    });
    res.end();
    return;
  }

  const output: Array<Record<string, unknown>> = [];
  const addItem = (item: Record<string, unknown>, stream: (index: number) => void) => {
    const index = output.length;
    const pending =
      item.type === "message"
        ? { ...item, status: "in_progress", content: [] }
        : item.type === "reasoning"
          ? { ...item, summary: [] }
          : item.type === "function_call"
            ? { ...item, status: "in_progress", arguments: "" }
            : { ...item, status: "in_progress", input: "" };
    send("response.output_item.added", { output_index: index, item: pending });
    stream(index);
    send("response.output_item.done", { output_index: index, item });
    output.push(item);
  };
  const textItem = (text: string) => {
    const item = {
      type: "message",
      id: nextId("msg"),
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text, annotations: [] }],
    };
    addItem(item, (index) => {
      const at = { item_id: item.id, output_index: index, content_index: 0 };
      send("response.content_part.added", {
        ...at,
        part: { type: "output_text", text: "", annotations: [] },
      });
      // Two deltas, as the API streams text in pieces.
      const cut = Math.ceil(text.length / 2);
      for (const delta of [text.slice(0, cut), text.slice(cut)]) {
        if (delta) send("response.output_text.delta", { ...at, delta });
      }
      send("response.output_text.done", { ...at, text });
      send("response.content_part.done", {
        ...at,
        part: { type: "output_text", text, annotations: [] },
      });
    });
  };

  if (reply.kind === "text") {
    if (reply.reasoning !== undefined) {
      const summary = reply.reasoning;
      const item = {
        type: "reasoning",
        id: nextId("rs"),
        summary: [{ type: "summary_text", text: summary }],
        encrypted_content: `gAAAAfake${req.n}`,
      };
      addItem(item, (index) => {
        const at = { item_id: item.id, output_index: index, summary_index: 0 };
        send("response.reasoning_summary_part.added", {
          ...at,
          part: { type: "summary_text", text: "" },
        });
        send("response.reasoning_summary_text.delta", { ...at, delta: summary });
        send("response.reasoning_summary_text.done", { ...at, text: summary });
        send("response.reasoning_summary_part.done", {
          ...at,
          part: { type: "summary_text", text: summary },
        });
      });
    }
    textItem(reply.text);
  } else if (reply.kind === "function_call") {
    if (reply.text !== undefined) textItem(reply.text);
    const args = JSON.stringify(reply.arguments);
    const item = {
      type: "function_call",
      id: nextId("fc"),
      call_id: reply.callId,
      name: reply.name,
      ...(reply.namespace !== undefined ? { namespace: reply.namespace } : {}),
      arguments: args,
      status: "completed",
    };
    addItem(item, (index) => {
      const at = { item_id: item.id, output_index: index };
      send("response.function_call_arguments.delta", { ...at, delta: args });
      send("response.function_call_arguments.done", { ...at, arguments: args });
    });
  } else {
    const item = {
      type: "custom_tool_call",
      id: nextId("ctc"),
      call_id: reply.callId,
      name: reply.name,
      input: reply.input,
      status: "completed",
    };
    addItem(item, (index) => {
      const at = { item_id: item.id, output_index: index };
      send("response.custom_tool_call_input.delta", { ...at, delta: reply.input });
      send("response.custom_tool_call_input.done", { ...at, input: reply.input });
    });
  }
  send("response.completed", { response: response("completed", output, { usage: req.usage }) });
  res.end();
}

const tokens = (text: string) => Math.ceil(Buffer.byteLength(text) / 4);

/**
 * A small model of the API's automatic prompt cache, so usage figures behave like the real
 * ones: the request is cut into blocks (each tool, the instructions, each input item); a prefix
 * of blocks an earlier request of the same model sent is cached. The API only caches prompts of
 * 1024 tokens or more and counts cached tokens in steps of 128 from there.
 */
class PromptCache {
  private readonly seen = new Set<string>();

  account(body: ResponsesBody): { input: number; cached: number } {
    const blocks: string[] = [];
    for (const tool of body.tools ?? []) blocks.push(`tool:${JSON.stringify(tool)}`);
    if (body.instructions) blocks.push(`instructions:${body.instructions}`);
    const input = body.input;
    if (typeof input === "string") blocks.push(`input:${input}`);
    else for (const item of input ?? []) blocks.push(`input:${JSON.stringify(item)}`);

    let hash = createHash("sha256")
      .update(body.model ?? "")
      .digest("hex");
    let bytes = 0;
    let cachedBytes = 0;
    const prefixes: string[] = [];
    for (const block of blocks) {
      hash = createHash("sha256").update(hash).update(block).digest("hex");
      bytes += Buffer.byteLength(block);
      if (this.seen.has(hash)) cachedBytes = bytes;
      prefixes.push(hash);
    }
    for (const prefix of prefixes) this.seen.add(prefix);
    const total = Math.max(1, Math.ceil(bytes / 4));
    const prefix = Math.floor(cachedBytes / 4);
    const cached = prefix >= 1024 ? 1024 + Math.floor((prefix - 1024) / 128) * 128 : 0;
    return { input: total, cached: Math.min(cached, total) };
  }
}

/** The input items of a responses request (a plain string input counts as one user message). */
export function inputItems(req: FakeRequest): InputItem[] {
  const input = req.body?.input;
  if (input === undefined) return [];
  if (typeof input === "string") return [{ type: "message", role: "user", content: input }];
  return input;
}

/** The text of one message item (all its text parts, joined). */
export function itemText(item: InputItem): string {
  if (typeof item.content === "string") return item.content;
  return (item.content ?? [])
    .map((part) => (typeof part.text === "string" ? part.text : ""))
    .join("");
}

/** Every message of a request with its role and text, oldest first. */
export function messages(req: FakeRequest): Array<{ role: string; text: string }> {
  return inputItems(req)
    .filter((item) => (item.type ?? "message") === "message" && item.role !== undefined)
    .map((item) => ({ role: item.role ?? "", text: itemText(item) }));
}

/**
 * The user's own messages, oldest first: user messages without the ones Codex adds itself
 * (`<environment_context>`, the AGENTS.md block, a compaction summary or prompt).
 */
export function userTexts(req: FakeRequest): string[] {
  return messages(req)
    .filter((m) => m.role === "user" && !isHarnessText(m.text))
    .map((m) => m.text);
}

/** The last of userTexts (what this request asked), or "" when there is none. */
export function lastUserText(req: FakeRequest): string {
  return userTexts(req).at(-1) ?? "";
}

/** The outputs Codex sent back for tool calls, by call id, in order. */
export function toolOutputs(req: FakeRequest): Array<{ callId: string; output: string }> {
  return inputItems(req)
    .filter((i) => i.type === "function_call_output" || i.type === "custom_tool_call_output")
    .map((i) => ({
      callId: String(i.call_id),
      output: typeof i.output === "string" ? i.output : JSON.stringify(i.output),
    }));
}

/** Whether a request is one of Codex's own compaction requests, not a turn of the user's. */
export function isCompactionRequest(req: FakeRequest): boolean {
  return messages(req).some(
    (m) => m.role === "user" && m.text.startsWith("You are performing a CONTEXT CHECKPOINT"),
  );
}

function isHarnessText(text: string): boolean {
  return (
    text.startsWith("<environment_context>") ||
    text.startsWith("# AGENTS.md instructions for ") ||
    text.startsWith("You are performing a CONTEXT CHECKPOINT COMPACTION") ||
    text.startsWith("Another language model started to solve this problem")
  );
}
