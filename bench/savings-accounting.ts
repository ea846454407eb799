/**
 * What a Messages API request would be billed for its input, by the rule the savings benchmark
 * states (issue 9), over the request bodies the fake API recorded. Pure: no clock, no I/O.
 *
 * The rule:
 * - A request is read in cache order: tools, then system, then messages, each cut into content
 *   blocks (a tool definition, a system block, one content block of a message). A string
 *   `system` or message `content` is one text block, and `cache_control` markers are left out
 *   of the comparison: the API caches on content, so the same text sent as a string one turn
 *   and as a marked block the next is the same block.
 * - The longest run of whole blocks at the start of the request that repeats the start of ANY
 *   earlier request of the same model is a cache read, billed at 0.1× the input price. The API
 *   caches whole blocks, so a block that merely begins like an earlier one (a cold prompt that
 *   re-sends the same issue body with a longer thread after it) is not read.
 * - Everything else is plain input at 1×. Optionally, the uncached part up to the request's last
 *   `cache_control` breakpoint is a cache write at 1.25× (`billedWithWritesBytes`).
 * - Sizes are the bytes of each block's JSON; tokens are bytes ÷ 4.
 *
 * Where this is kinder than the real API: a real read also needs the earlier request to have
 * written that prefix (a breakpoint at its end), within the cache's lifetime (5 minutes), within
 * 20 blocks of the reading request's breakpoint, and of at least the model's minimum cacheable
 * length. `strictReadBytes` applies the first of those (reads only up to an earlier request's
 * breakpoint), so a reader can see how much the simple rule gives away and to whom.
 */
import { createHash } from "node:crypto";

/** The parts of a Messages API request body the accounting reads (the fake's MessagesBody fits). */
export interface PromptBody {
  model?: string;
  system?: string | ReadonlyArray<Record<string, unknown>>;
  tools?: ReadonlyArray<Record<string, unknown>>;
  messages?: ReadonlyArray<{
    role: string;
    content: string | ReadonlyArray<Record<string, unknown>>;
  }>;
}

export const PRICE = { cacheRead: 0.1, input: 1, cacheWrite: 1.25 } as const;
export const BYTES_PER_TOKEN = 4;

export type Section = "tools" | "system" | "messages";

/** One content block of a request, in cache order. */
export interface CacheBlock {
  section: Section;
  /** Index of the message it belongs to; null for tools and system. */
  message: number | null;
  role: string | null;
  /** Size of the block's JSON without cache_control, in bytes. */
  bytes: number;
  /** The block carried cache_control. */
  breakpoint: boolean;
  /** What identifies the block's content: section, role and canonical JSON. */
  key: string;
}

/** The blocks of a request in cache order: tools, system, messages. */
export function cacheOrder(body: PromptBody): CacheBlock[] {
  const out: CacheBlock[] = [];
  const push = (
    section: Section,
    value: string | Record<string, unknown>,
    message: number | null,
    role: string | null,
  ) => {
    const block = typeof value === "string" ? { type: "text", text: value } : value;
    const { cache_control, ...content } = block;
    const json = canonicalJson(content);
    out.push({
      section,
      message,
      role,
      bytes: Buffer.byteLength(json),
      breakpoint: cache_control !== undefined && cache_control !== null,
      key: `${section}:${role ?? ""}:${json}`,
    });
  };
  for (const tool of body.tools ?? []) push("tools", tool, null, null);
  if (typeof body.system === "string") push("system", body.system, null, null);
  else for (const block of body.system ?? []) push("system", block, null, null);
  (body.messages ?? []).forEach((m, i) => {
    if (typeof m.content === "string") push("messages", m.content, i, m.role);
    else for (const block of m.content) push("messages", block, i, m.role);
  });
  return out;
}

/** The bill for one request's input, in bytes of block JSON (÷ BYTES_PER_TOKEN for tokens). */
export interface RequestAccount {
  model: string;
  blocks: number;
  totalBytes: number;
  /** The whole-block prefix repeated from an earlier request of the same model (0.1×). */
  readBytes: number;
  readBlocks: number;
  /** Of readBytes, what ends at an earlier request's cache_control breakpoint. */
  strictReadBytes: number;
  /** totalBytes − readBytes (1×). */
  uncachedBytes: number;
  /** Uncached bytes up to this request's last breakpoint: what it would write to the cache. */
  writeBytes: number;
  /** The request's last message when it is the user's (the new turn); else 0. */
  newMessageBytes: number;
  /** Everything before that message: tools, system and the earlier messages. */
  priorBytes: number;
  /** readBytes × 0.1 + uncachedBytes × 1. */
  billedBytes: number;
  /** readBytes × 0.1 + writeBytes × 1.25 + the rest × 1. */
  billedWithWritesBytes: number;
  /** strictReadBytes × 0.1 + the rest × 1. */
  strictBilledBytes: number;
  /** The floor: priorBytes × 0.1 + newMessageBytes × 1 (all that came before read from cache). */
  floorBytes: number;
}

/**
 * Accounts each request against the ones before it in the list (their order is the order they
 * reached the API). Requests of different models never share a cache.
 */
export function accountRequests(bodies: readonly PromptBody[]): RequestAccount[] {
  const seen = new Map<string, { prefixes: Set<string>; written: Set<string> }>();
  return bodies.map((body) => {
    const model = body.model ?? "";
    let cache = seen.get(model);
    if (!cache) seen.set(model, (cache = { prefixes: new Set(), written: new Set() }));
    const blocks = cacheOrder(body);
    const hashes = prefixHashes(model, blocks);

    let readBlocks = 0;
    while (readBlocks < blocks.length && cache.prefixes.has(hashes[readBlocks]!)) readBlocks++;
    let strictBlocks = readBlocks;
    while (strictBlocks > 0 && !cache.written.has(hashes[strictBlocks - 1]!)) strictBlocks--;

    const sum = (from: number, to: number) =>
      blocks.slice(from, to).reduce((n, b) => n + b.bytes, 0);
    const totalBytes = sum(0, blocks.length);
    const readBytes = sum(0, readBlocks);
    const strictReadBytes = sum(0, strictBlocks);
    const lastBreakpoint = blocks.findLastIndex((b) => b.breakpoint);
    const writeBytes = lastBreakpoint >= readBlocks ? sum(readBlocks, lastBreakpoint + 1) : 0;

    const messages = body.messages ?? [];
    const last = messages.length - 1;
    const newStart =
      last >= 0 && messages[last]!.role === "user"
        ? blocks.findIndex((b) => b.message === last)
        : -1;
    const newMessageBytes = newStart >= 0 ? sum(newStart, blocks.length) : 0;
    const priorBytes = totalBytes - newMessageBytes;

    hashes.forEach((h, i) => {
      cache.prefixes.add(h);
      if (blocks[i]!.breakpoint) cache.written.add(h);
    });

    const uncachedBytes = totalBytes - readBytes;
    return {
      model,
      blocks: blocks.length,
      totalBytes,
      readBytes,
      readBlocks,
      strictReadBytes,
      uncachedBytes,
      writeBytes,
      newMessageBytes,
      priorBytes,
      billedBytes: readBytes * PRICE.cacheRead + uncachedBytes * PRICE.input,
      billedWithWritesBytes:
        readBytes * PRICE.cacheRead +
        writeBytes * PRICE.cacheWrite +
        (uncachedBytes - writeBytes) * PRICE.input,
      strictBilledBytes:
        strictReadBytes * PRICE.cacheRead + (totalBytes - strictReadBytes) * PRICE.input,
      floorBytes: priorBytes * PRICE.cacheRead + newMessageBytes * PRICE.input,
    };
  });
}

/** Bytes as the benchmark's stated token estimate. */
export function tokens(bytes: number): number {
  return bytes / BYTES_PER_TOKEN;
}

/** hash[i] names the first i + 1 blocks of a request of this model. */
function prefixHashes(model: string, blocks: readonly CacheBlock[]): string[] {
  let h = createHash("sha256").update(model).digest("hex");
  return blocks.map((b) => (h = createHash("sha256").update(h).update(b.key).digest("hex")));
}

/** JSON with object keys sorted, so key order in what the CLI sent never decides a match. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort())
    out[k] = sortKeys((value as Record<string, unknown>)[k]);
  return out;
}
