/**
 * What resuming saved a conversation, estimated from its recorded turns by the accounting of
 * the savings benchmark (bench/savings-accounting.ts): input read from the prompt cache is
 * billed at 0.1× the input price, other input at 1×, and a token is 4 bytes.
 *
 * A resumed turn sent the new comment and read everything before it from the cache. Started
 * fresh instead, the turn would have sent the thread again, as new input: the issue and the
 * earlier comments (the prompts of the session's earlier turns) and the earlier answers. So a
 * resumed turn saved 0.9 × (the bytes of the prompts and answers of its session's earlier turns)
 * ÷ 4 billed-equivalent input tokens. What both would send alike (the CLI's own tools and system
 * prompt, read from the cache either way; the new comment, sent either way) saves nothing.
 *
 * Only while the cache still held the session: a resumed turn that began longer after its
 * session's previous turn than the lifetime that turn asked for (`cache_ttl`, 5m or 1h) read
 * nothing from the cache, and saved nothing in tokens (it bought continuity only). A turn
 * recorded before Tether kept the lifetime is counted as before, cached.
 *
 * It is an estimate, and a cautious one: tool calls and their results, which a fresh start
 * would have to repeat to learn the same things, are not counted; and a turn recorded before
 * Tether kept prompt and answer sizes adds nothing.
 */
import { cacheTtlMs } from "../core/cache-ttl.js";
import type { ConversationTurn } from "../sql/spend.js";

export const CACHE_READ_PRICE = 0.1;
export const BYTES_PER_TOKEN = 4;

export interface SavingsEstimate {
  /** Turns that resumed their session. */
  resumedTurns: number;
  /** Billed-equivalent input tokens those turns had: 0.1 × cache reads + other input. */
  resumedInputTokens: number;
  /** Billed-equivalent input tokens they saved against starting fresh. */
  savedTokens: number;
  /** Resumed turns that came after the cache's lifetime had run out: they saved no tokens. */
  pastCacheTurns: number;
}

export function estimateSavings(turns: readonly ConversationTurn[]): SavingsEstimate {
  /** Bytes each session's turns added to its thread so far. */
  const threadBytes = new Map<string, number>();
  /** Each session's latest turn so far. */
  const previous = new Map<string, ConversationTurn>();
  const est: SavingsEstimate = {
    resumedTurns: 0,
    resumedInputTokens: 0,
    savedTokens: 0,
    pastCacheTurns: 0,
  };
  for (const t of [...turns].sort((a, b) => a.id - b.id)) {
    if (t.sessionId === null) continue;
    if (t.resumed) {
      est.resumedTurns++;
      est.resumedInputTokens +=
        CACHE_READ_PRICE * (t.cacheReadTokens ?? 0) +
        (t.inputTokens ?? 0) +
        (t.cacheCreationTokens ?? 0);
      if (cacheHeld(previous.get(t.sessionId), t))
        est.savedTokens +=
          ((1 - CACHE_READ_PRICE) * (threadBytes.get(t.sessionId) ?? 0)) / BYTES_PER_TOKEN;
      else est.pastCacheTurns++;
    }
    previous.set(t.sessionId, t);
    threadBytes.set(
      t.sessionId,
      (threadBytes.get(t.sessionId) ?? 0) + (t.promptBytes ?? 0) + (t.answerBytes ?? 0),
    );
  }
  est.resumedInputTokens = Math.round(est.resumedInputTokens);
  est.savedTokens = Math.round(est.savedTokens);
  return est;
}

/** The cache still held what `prev` left when `turn` began (unknown lifetimes: assumed so). */
function cacheHeld(prev: ConversationTurn | undefined, turn: ConversationTurn): boolean {
  if (!prev?.cacheTtl || !prev.finishedAt || !turn.startedAt) return true;
  return turn.startedAt.getTime() - prev.finishedAt.getTime() <= cacheTtlMs(prev.cacheTtl);
}
