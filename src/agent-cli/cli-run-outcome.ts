/**
 * What a CLI run (cli-run.ts) ends with: the tail of its stderr, the RunOutcome, and the
 * details of a cancel.
 */
import type { CliDialect } from "./cli-dialect.js";
import type { OutcomeKind, RunOutcome } from "./runtime-adapter.js";

/** The last `maxBytes` (about) of the CLI's stderr. */
export class StderrTail {
  private stderr: Buffer[] = [];
  private stderrBytes = 0;

  constructor(private readonly maxBytes: number) {}

  keep(chunk: Buffer): void {
    this.stderr.push(chunk);
    this.stderrBytes += chunk.length;
    while (this.stderr.length > 1 && this.stderrBytes - this.stderr[0]!.length >= this.maxBytes) {
      this.stderrBytes -= this.stderr.shift()!.length;
    }
  }

  text(): string {
    const all = Buffer.concat(this.stderr);
    return all.subarray(Math.max(0, all.length - this.maxBytes)).toString("utf8");
  }
}

/** The outcome of a run that ended as `kind`, from what its dialect's state holds. */
export function buildOutcome<M extends { kind: string }, S>(
  dialect: CliDialect<M, S>,
  state: S,
  run: {
    kind: OutcomeKind;
    detail: string;
    exit: { exitCode: number | null; signal: string | null };
    /** The session the run was asked to resume. */
    asked: string | undefined;
    startedAt: number;
    stderrTail: string;
    parseCounts: { unreadable: number; unknown: number };
  },
): RunOutcome {
  const { kind, detail, exit, asked } = run;
  const started = dialect.sessionOf(state);
  const sessionId = started && (asked === undefined || started === asked) ? started : undefined;
  const entry = sessionId ? dialect.entryOf?.(state) : undefined;
  return {
    ...(entry ? { entry } : {}),
    kind,
    sessionId,
    // A turn stopped at its spend limit keeps what the agent had written by then.
    resultText: kind === "success" || kind === "turn_limit" ? dialect.resultText(state) : undefined,
    usage: dialect.usage(state, Date.now() - run.startedAt),
    toolRan: dialect.toolRan(state),
    detail,
    stderrTail: run.stderrTail,
    exitCode: exit.exitCode,
    signal: exit.signal,
    unreadableLines: run.parseCounts.unreadable,
    unknownLines: run.parseCounts.unknown,
  };
}

export function cancelDetail(reason: string | undefined): string {
  return reason ? `cancelled: ${reason}` : "cancelled by request";
}

export function abortReason(signal: AbortSignal | undefined): string | undefined {
  const reason: unknown = signal?.reason;
  if (reason === undefined) return undefined;
  if (reason instanceof Error) return reason.name === "AbortError" ? undefined : reason.message;
  return String(reason);
}
