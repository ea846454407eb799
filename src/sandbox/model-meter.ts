/**
 * What a model call cost, read by the egress proxy from the upstream's answer as it streams past
 * (#28): the agent can reach the model API through the proxy with its own requests, and those
 * never appear in the CLI's report, so the proxy counts every call it lets through.
 *
 * Both APIs report usage in their answers: Anthropic's Messages API in `message_start` (input,
 * cache, output so far) and `message_delta` (running totals), or in the body when not streaming;
 * OpenAI's Responses API in the final `response.completed` (or `.incomplete`, `.failed`) event,
 * or in the body. Usage is reported as soon as it is seen, so a call cut off mid-stream still
 * counts what its start said (Anthropic bills the input of a call it started).
 */

export type ModelApi = "anthropic" | "openai" | "google";

/** One call's usage, in the shape Tether prices (input excludes cache reads and writes). */
export interface MeteredUsage {
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
  /**
   * Server-side searches the answer reports, billed per search apart from the tokens: only when
   * the operator allows a search tool (TETHER_PROXY_SERVER_TOOLS). Anthropic's
   * `usage.server_tool_use.web_search_requests`, OpenAI's `web_search_call` output items,
   * Gemini's grounding queries.
   */
  webSearches: number;
}

/** An SSE line or a JSON body larger than this is not read (no usage lives in such a thing). */
const MAX_BUFFER = 32 * 1024 * 1024;

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
const num = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;
const str = (v: unknown): string | undefined => (typeof v === "string" && v ? v : undefined);

/**
 * Reads one answer's bytes; `onUsage` gets the call's usage so far each time it grows. The
 * model is the answer's, else the one the request asked for.
 */
export class ResponseMeter {
  private readonly usage: MeteredUsage;
  private readonly sse: boolean;
  private buffer = "";
  private overflow = false;

  constructor(
    private readonly api: ModelApi,
    contentType: string | undefined,
    requestModel: string | null,
    private readonly onUsage: (usage: MeteredUsage) => void,
    /** Told the id of the response (OpenAI), so a later call may continue it. */
    private readonly onResponseId?: (id: string) => void,
  ) {
    this.sse = /text\/event-stream/i.test(contentType ?? "");
    this.usage = {
      model: requestModel,
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheCreationTokens: 0,
      webSearches: 0,
    };
  }

  push(chunk: Buffer): void {
    if (this.overflow) return;
    this.buffer += chunk.toString("utf8");
    if (this.sse) {
      let nl: number;
      while ((nl = this.buffer.indexOf("\n")) >= 0) {
        const line = this.buffer.slice(0, nl).replace(/\r$/, "");
        this.buffer = this.buffer.slice(nl + 1);
        if (line.startsWith("data:")) this.read(line.slice(5).trim());
      }
    }
    if (this.buffer.length > MAX_BUFFER) {
      this.overflow = true;
      this.buffer = "";
    }
  }

  end(): void {
    if (this.overflow) return;
    if (this.sse) {
      const line = this.buffer.replace(/\r$/, "");
      if (line.startsWith("data:")) this.read(line.slice(5).trim());
    } else this.read(this.buffer.trim());
    this.buffer = "";
  }

  private read(text: string): void {
    if (!text || text === "[DONE]") return;
    let data: Json | undefined;
    try {
      data = obj(JSON.parse(text));
    } catch {
      return;
    }
    if (!data) return;
    const changed =
      this.api === "anthropic"
        ? this.readAnthropic(data)
        : this.api === "google"
          ? this.readGoogle(data)
          : this.readOpenAI(data);
    if (changed) this.onUsage({ ...this.usage });
  }

  /** message_start (message.usage), message_delta (usage), or a whole message (usage). */
  private readAnthropic(data: Json): boolean {
    const message = data.type === "message_start" ? obj(data.message) : data;
    const model = str(message?.model);
    if (model) this.usage.model = model;
    const u = obj(data.type === "message_delta" ? data.usage : message?.usage);
    if (!u) return false;
    // Totals so far: a later event repeats or raises them, never adds to them.
    const raise = (key: keyof Omit<MeteredUsage, "model">, v: unknown) => {
      const n = num(v);
      if (n !== undefined && n > this.usage[key]) this.usage[key] = n;
    };
    raise("inputTokens", u.input_tokens);
    raise("outputTokens", u.output_tokens);
    raise("cacheReadTokens", u.cache_read_input_tokens);
    raise("cacheCreationTokens", u.cache_creation_input_tokens);
    raise("webSearches", obj(u.server_tool_use)?.web_search_requests);
    return true;
  }

  /**
   * A GenerateContentResponse (one SSE chunk, or the whole body): `usageMetadata` holds the
   * call's totals so far (promptTokenCount includes the cached tokens; thoughts are billed as
   * output), `modelVersion` the model.
   */
  private readGoogle(data: Json): boolean {
    const model = str(data.modelVersion);
    if (model) this.usage.model = model;
    // A grounded answer: each search query it ran is billed (at least one per grounded prompt).
    for (const c of Array.isArray(data.candidates) ? data.candidates : []) {
      const g = obj(obj(c)?.groundingMetadata);
      if (!g) continue;
      const queries = Array.isArray(g.webSearchQueries) ? g.webSearchQueries.length : 0;
      this.usage.webSearches = Math.max(this.usage.webSearches, queries, 1);
    }
    const u = obj(data.usageMetadata);
    if (!u) return false;
    const prompt = num(u.promptTokenCount) ?? 0;
    const cached = Math.min(prompt, num(u.cachedContentTokenCount) ?? 0);
    this.usage.inputTokens = prompt - cached;
    this.usage.cacheReadTokens = cached;
    this.usage.outputTokens = (num(u.candidatesTokenCount) ?? 0) + (num(u.thoughtsTokenCount) ?? 0);
    return true;
  }

  /** A response event carrying `response.usage`, or a whole response (`usage`). */
  private readOpenAI(data: Json): boolean {
    const response = typeof data.type === "string" ? obj(data.response) : data;
    const id = str(response?.id);
    if (id && this.onResponseId) this.onResponseId(id);
    if (data.type === "response.output_item.done" && obj(data.item)?.type === "web_search_call") {
      this.usage.webSearches++;
      return true;
    }
    const model = str(response?.model);
    if (model) this.usage.model = model;
    const u = obj(response?.usage);
    if (!u) return false;
    const input = num(u.input_tokens) ?? 0;
    const cached = Math.min(input, num(obj(u.input_tokens_details)?.cached_tokens) ?? 0);
    this.usage.inputTokens = input - cached;
    this.usage.cacheReadTokens = cached;
    this.usage.outputTokens = num(u.output_tokens) ?? 0;
    return true;
  }
}
