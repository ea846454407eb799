import type http from "node:http";
import type { FakeModel, FakeModelOptions } from "./fake-model-server.js";
import { scriptedFake, startScriptedServer, usageOf } from "./fake-model-server.js";

/**
 * A fake Gemini API (generativelanguage.googleapis.com, v1beta) on 127.0.0.1 that the real
 * Gemini CLI talks to when `GOOGLE_GEMINI_BASE_URL` points at it (docs/gemini-cli-facts.md).
 * It answers `POST /v1beta/models/{model}:generateContent` (JSON) and
 * `…:streamGenerateContent?alt=sse` (server-sent events, one `GenerateContentResponse` a
 * chunk), `…:countTokens`, and errors in the API's shape (`{"error":{code,message,status}}`).
 * It keeps every request so tests can prove a resume (the earlier turns are sent again in
 * `contents`) and read what the model was asked and what a tool call returned.
 */

/** A `functionCall` part the model asks for; the CLI runs it and answers with a functionResponse. */
export interface FakeFunctionCall {
  name: string;
  args: Record<string, unknown>;
}

/** One scripted answer to one streamGenerateContent/generateContent request. */
export type FakeGeminiReply =
  | { kind: "text"; text: string }
  | { kind: "calls"; calls: FakeFunctionCall[]; text?: string }
  | {
      /** An HTTP error with the API's JSON error body. */
      kind: "error";
      status: number;
      /** The API's status word, e.g. INVALID_ARGUMENT, UNAUTHENTICATED, RESOURCE_EXHAUSTED. */
      statusText: string;
      message: string;
    }
  | { kind: "hang" };

/** The API's words for a prompt over the model's input limit (HTTP 400 INVALID_ARGUMENT). */
export const GEMINI_OVERFLOW_MESSAGE =
  "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).";

export const geminiReplies = {
  text: (text: string): FakeGeminiReply => ({ kind: "text", text }),
  call: (name: string, args: Record<string, unknown>, text?: string): FakeGeminiReply => ({
    kind: "calls",
    calls: [{ name, args }],
    ...(text === undefined ? {} : { text }),
  }),
  calls: (calls: FakeFunctionCall[]): FakeGeminiReply => ({ kind: "calls", calls }),
  /** Gemini CLI's file tools: write_file {file_path, content}, read_file {file_path}. */
  writeFile: (file_path: string, content: string): FakeGeminiReply =>
    geminiReplies.call("write_file", { file_path, content }),
  readFile: (file_path: string): FakeGeminiReply => geminiReplies.call("read_file", { file_path }),
  /** The shell tool: run_shell_command {command}. */
  shell: (command: string): FakeGeminiReply => geminiReplies.call("run_shell_command", { command }),
  contextOverflow: (): FakeGeminiReply => ({
    kind: "error",
    status: 400,
    statusText: "INVALID_ARGUMENT",
    message: GEMINI_OVERFLOW_MESSAGE,
  }),
  unauthorized: (): FakeGeminiReply => ({
    kind: "error",
    status: 400,
    statusText: "INVALID_ARGUMENT",
    message: "API key not valid. Please pass a valid API key.",
  }),
  serverError: (): FakeGeminiReply => ({
    kind: "error",
    status: 500,
    statusText: "INTERNAL",
    message:
      "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
  }),
  hang: (): FakeGeminiReply => ({ kind: "hang" }),
};

/** One content of a request's `contents`. */
export interface GeminiContent {
  role?: string;
  parts?: Array<Record<string, unknown>>;
}

export interface GeminiBody {
  contents?: GeminiContent[];
  systemInstruction?: GeminiContent | string;
  tools?: Array<{ functionDeclarations?: Array<{ name: string }>; [key: string]: unknown }>;
  generationConfig?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface FakeGeminiUsage {
  promptTokenCount: number;
  candidatesTokenCount: number;
  cachedContentTokenCount?: number;
  thoughtsTokenCount?: number;
  totalTokenCount: number;
}

/** What the fake recorded about one request. */
export interface FakeGeminiRequest {
  n: number;
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** `generateContent`, `streamGenerateContent`, `countTokens`, or another last path word. */
  action: string;
  /** The model named in the path. */
  model: string | undefined;
  body: GeminiBody | undefined;
  time: number;
  reply?: FakeGeminiReply["kind"];
  usage?: FakeGeminiUsage;
}

/**
 * The default reply is `reply#N contents=M` (which request this was, how many contents it
 * carried); "simulated" usage counts 4 bytes a token over the whole body.
 */
export interface FakeGeminiOptions extends Omit<
  FakeModelOptions<FakeGeminiRequest, FakeGeminiReply, FakeGeminiUsage>,
  "port" | "latencyMs"
> {
  /**
   * Answer the CLI's side requests (generateContent with a JSON schema: next-speaker checks,
   * loop detection, routing) with this instead of the script. Default: a JSON object saying
   * the user speaks next / no loop.
   */
  sideReply?: (req: FakeGeminiRequest) => unknown;
}

/** The fake as a test holds it (fake-model-server.ts); `url` is for GOOGLE_GEMINI_BASE_URL, e.g. http://127.0.0.1:41234. */
export interface FakeGemini extends FakeModel<FakeGeminiRequest, FakeGeminiReply> {
  /** The requests that took a scripted (or default) turn answer. */
  turnRequests(): FakeGeminiRequest[];
}

const tokens = (s: string) => Math.ceil(Buffer.byteLength(s) / 4);

/** Whether a request is the CLI asking for a structured side answer rather than a turn. */
export function isSideRequest(req: FakeGeminiRequest): boolean {
  const cfg = req.body?.generationConfig;
  return (
    req.action === "generateContent" &&
    cfg !== undefined &&
    (cfg.responseMimeType === "application/json" ||
      cfg.responseJsonSchema !== undefined ||
      cfg.responseSchema !== undefined)
  );
}

export async function startFakeGemini(opts: FakeGeminiOptions = {}): Promise<FakeGemini> {
  const usageFor = usageOf(
    opts,
    (req: FakeGeminiRequest, reply: FakeGeminiReply): FakeGeminiUsage => {
      const prompt = tokens(JSON.stringify(req.body ?? {}));
      const out = Math.max(
        1,
        tokens(
          reply.kind === "text"
            ? reply.text
            : reply.kind === "calls"
              ? (reply.text ?? "") + JSON.stringify(reply.calls)
              : "",
        ),
      );
      return { promptTokenCount: prompt, candidatesTokenCount: out, totalTokenCount: prompt + out };
    },
  );

  const server = await startScriptedServer<FakeGeminiRequest, FakeGeminiReply>({
    name: "fake Gemini",
    decodeBody: true,
    defaultReply:
      opts.defaultReply ??
      ((req) => geminiReplies.text(`reply#${req.n} contents=${req.body?.contents?.length ?? 0}`)),
    record: (n, { req, url, json }) => {
      const m = MODEL_PATH.exec(url.pathname);
      return {
        n,
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        action: m?.[2] ?? url.pathname.split("/").at(-1) ?? "",
        model: m?.[1] ? decodeURIComponent(m[1]) : undefined,
        body: json as GeminiBody | undefined,
        time: Date.now(),
      };
    },
    answer: (record, res, server) => {
      const routed = MODEL_PATH.test(record.path);
      if (record.method === "POST" && routed && record.action === "countTokens") {
        sendJson(res, 200, { totalTokens: tokens(JSON.stringify(record.body ?? {})) });
      } else if (record.method === "POST" && routed && isSideRequest(record)) {
        const answer = opts.sideReply?.(record) ?? sideAnswer(record);
        const text = JSON.stringify(answer);
        sendJson(
          res,
          200,
          response(record, [{ text }], "STOP", {
            promptTokenCount: tokens(JSON.stringify(record.body ?? {})),
            candidatesTokenCount: tokens(text),
            totalTokenCount: tokens(JSON.stringify(record.body ?? {})) + tokens(text),
          }),
        );
      } else if (
        record.method === "POST" &&
        routed &&
        (record.action === "generateContent" || record.action === "streamGenerateContent")
      ) {
        const reply = server.next(record);
        record.reply = reply.kind;
        if (reply.kind === "hang") return;
        if (reply.kind === "error") {
          sendJson(res, reply.status, {
            error: { code: reply.status, message: reply.message, status: reply.statusText },
          });
          return;
        }
        const usage = usageFor(record, reply);
        record.usage = usage;
        const parts: Array<Record<string, unknown>> = [];
        if (reply.kind === "text") parts.push({ text: reply.text });
        else {
          if (reply.text) parts.push({ text: reply.text });
          for (const c of reply.calls) parts.push({ functionCall: { name: c.name, args: c.args } });
        }
        if (record.action === "generateContent") {
          sendJson(res, 200, response(record, parts, "STOP", usage));
          return;
        }
        res.writeHead(200, {
          "content-type": "text/event-stream",
          "cache-control": "no-cache",
        });
        // Text in two chunks as the API streams it, the usage on the last.
        const send = (v: unknown) => res.write(`data: ${JSON.stringify(v)}\r\n\r\n`);
        if (reply.kind === "text" && reply.text.length > 1) {
          const half = Math.ceil(reply.text.length / 2);
          send(response(record, [{ text: reply.text.slice(0, half) }], undefined, undefined));
          send(response(record, [{ text: reply.text.slice(half) }], "STOP", usage));
        } else send(response(record, parts, "STOP", usage));
        res.end();
      } else {
        sendJson(res, 404, {
          error: {
            code: 404,
            message: `fake Gemini: no route for ${record.method} ${record.path}`,
            status: "NOT_FOUND",
          },
        });
      }
    },
  });
  const { requests } = server;

  return {
    ...scriptedFake(server),
    url: `http://127.0.0.1:${server.port}`,
    turnRequests: () => requests.filter((r) => r.reply !== undefined),
  };
}

/** `/v1beta/models/{model}:{action}`: the model and what is asked of it. */
const MODEL_PATH = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(\w+)$/;

function response(
  req: FakeGeminiRequest,
  parts: Array<Record<string, unknown>>,
  finishReason: string | undefined,
  usage: FakeGeminiUsage | undefined,
): Record<string, unknown> {
  return {
    candidates: [
      {
        content: { role: "model", parts },
        ...(finishReason ? { finishReason } : {}),
        index: 0,
      },
    ],
    ...(usage ? { usageMetadata: usage } : {}),
    modelVersion: req.model ?? "gemini-2.5-pro",
    responseId: `fake-${req.n}`,
  };
}

/** A plausible structured answer to the CLI's side questions. */
function sideAnswer(req: FakeGeminiRequest): unknown {
  const schema = JSON.stringify(req.body?.generationConfig ?? {});
  if (schema.includes("next_speaker"))
    return { reasoning: "The model answered; the user speaks next.", next_speaker: "user" };
  if (schema.includes("model_choice")) return { reasoning: "simple", model_choice: "flash" };
  return {};
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=UTF-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}
