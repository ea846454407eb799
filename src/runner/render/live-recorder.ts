/**
 * The live view's writer (#40): each event the CLI streams becomes an entry of the turn's journal
 * (eventStreamed; in Postgres a row of turn_events), redacted with the turn's scrub and clipped, written in order without
 * holding up the run. A turn's rows are bounded: past LIVE_BOUND the oldest are deleted (the
 * init stays) and a `dropped` row says how many events, and how many tool calls, went.
 */
import type { Logger } from "../../log.js";
import type { RunEvent } from "../../agent-cli/runtime-adapter.js";
import type { TurnJournal } from "../../core/turn-journal.js";

/** Most rows and bytes one turn keeps; past them the oldest go. */
export const LIVE_BOUND = { maxEvents: 2000, maxBytes: 2 * 1024 * 1024 };

/** Longest kept: the agent's text, a tool's input (as JSON), a tool's output, the answer. */
export const LIVE_CLIP = { text: 4000, input: 2000, output: 1000, answer: 16_000 };

export interface LiveRow {
  kind: string;
  body: Record<string, unknown>;
}

/** `s` cut to `max` characters, saying how much was cut. */
export function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}… (${s.length - max} more characters)`;
}

/** A tool's input as the page shows it: JSON, clipped. */
function inputText(input: unknown): string {
  let s: string;
  try {
    s = typeof input === "string" ? input : (JSON.stringify(input) ?? "");
  } catch {
    s = String(input);
  }
  return clip(s, LIVE_CLIP.input);
}

/** What the live view keeps of an event (pure; scrubbed by the recorder). Null: nothing. */
export function liveRow(e: RunEvent): LiveRow | null {
  switch (e.type) {
    case "init":
      return { kind: "init", body: { model: e.model, cliVersion: e.cliVersion } };
    case "text":
      return {
        kind: "text",
        body: { text: clip(e.text, LIVE_CLIP.text), sub: e.parentToolUseId !== null },
      };
    case "tool_use":
      return {
        kind: "tool_use",
        body: {
          id: e.id,
          name: e.name,
          input: inputText(e.input),
          sub: e.parentToolUseId !== null,
        },
      };
    case "tool_result":
      return {
        kind: "tool_result",
        body: {
          toolUseId: e.toolUseId,
          isError: e.isError,
          ...(e.output !== undefined ? { output: clip(e.output, LIVE_CLIP.output) } : {}),
        },
      };
    case "api_retry":
      return {
        kind: "api_retry",
        body: { attempt: e.attempt, errorStatus: e.errorStatus, retryDelayMs: e.retryDelayMs },
      };
    case "compacted":
      return { kind: "compacted", body: { trigger: e.trigger, preTokens: e.preTokens } };
    case "usage":
      return {
        kind: "usage",
        body: {
          inputTokens: e.inputTokens,
          outputTokens: e.outputTokens,
          costUsd: e.costUsd,
        },
      };
    case "result":
      return {
        kind: "result",
        body: {
          subtype: e.subtype,
          isError: e.isError,
          text: e.text === null ? null : clip(e.text, LIVE_CLIP.answer),
          costUsd: e.costUsd,
          numTurns: e.numTurns,
        },
      };
  }
}

/** Every string inside `v` through `scrub`. */
export function scrubDeep(v: unknown, scrub: (s: string) => string): unknown {
  if (typeof v === "string") return scrub(v);
  if (Array.isArray(v)) return v.map((x) => scrubDeep(x, scrub));
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, scrubDeep(x, scrub)]));
  }
  return v;
}

export interface LiveRecorder {
  record(e: RunEvent): void;
  /** Settles when every row so far is written (or failed). */
  flush(): Promise<void>;
}

export function liveRecorder(o: {
  journal: Pick<TurnJournal, "eventStreamed" | "eventsTrimmed" | "eventsDropped">;
  scrub: (s: string) => string;
  log: Logger;
  bound?: { maxEvents: number; maxBytes: number };
}): LiveRecorder {
  const bound = o.bound ?? LIVE_BOUND;
  let chain: Promise<void> = Promise.resolve();
  let events = 0;
  let bytes = 0;
  const dropped = { events: 0, toolCalls: 0 };
  let failed = false;
  const write = async (row: LiveRow) => {
    const body = scrubDeep(row.body, o.scrub);
    await o.journal.eventStreamed(row.kind, body);
    events++;
    bytes += Buffer.byteLength(JSON.stringify(body));
    // Trim with some slack, so a turn past its bound deletes in batches, not at every event.
    if (events > bound.maxEvents * 1.1 || bytes > bound.maxBytes * 1.1) {
      const gone = await o.journal.eventsTrimmed(bound);
      dropped.events += gone.events;
      dropped.toolCalls += gone.toolCalls;
      await o.journal.eventsDropped(dropped);
      events = bound.maxEvents;
      bytes = bound.maxBytes;
    }
  };
  return {
    record(e) {
      const row = liveRow(e);
      if (!row) return;
      chain = chain.then(() =>
        write(row).catch((err: unknown) => {
          // The live view is a window on the turn, never a reason to stop it.
          if (!failed) o.log.warn({ err }, "could not record the turn's event for its live view");
          failed = true;
        }),
      );
    },
    flush: () => chain,
  };
}
