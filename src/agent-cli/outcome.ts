/**
 * How any CLI's run ended, in the engine's words: why the engine stopped it (StopReason), how
 * the child exited (ExitFacts), the verdict a dialect gives (Classification) by the ladder every
 * dialect's verdict is judged by (classifyExit), and the phrases it is written with.
 */
import type { OutcomeKind } from "./runtime-adapter.js";

/**
 * Why the adapter stopped a run itself. `no_start`: the CLI printed nothing at all within the
 * start-up limit (a wedged binary); the outcome is `failed`, since the turn never began.
 */
export type StopReason =
  | "cancelled"
  | "timed_out"
  | "stalled"
  | "auth_failed"
  | "resume_rejected"
  | "no_start"
  /** The egress proxy's count of the model spend reached the turn's limit. */
  | "turn_limit";

/** How the child ended, and whether the adapter ended it. */
export interface ExitFacts {
  exitCode: number | null;
  signal: string | null;
  stderrTail: string;
  /** The child could not be started at all. */
  spawnError?: string;
  /** Set when the adapter stopped the run (the first reason wins). */
  stop?: { reason: StopReason; detail: string };
  /** The result line came only after the stop was asked for (it may be the kill's doing). */
  resultAfterStop?: boolean;
}

export interface Classification {
  kind: OutcomeKind;
  detail: string;
  /** A poisoned session whose history no longer fits the model's context window. */
  contextOverflow?: boolean;
}

/** What a dialect's classifier is given: S is what the run showed (the dialect's state). */
export interface ClassifyInput<S> {
  /** The session the run was asked to resume, if any. */
  resumeSessionId?: string;
  state: S;
  exit: ExitFacts;
}

/**
 * A resumed run whose CLI names another session than the one asked for (it started a new one):
 * stop it now, since letting it work (and run tools) would spoil the runner's fresh retry.
 * `noun`: what the CLI calls a session ("thread").
 */
export function resumedElsewhere(
  asked: string | undefined,
  named: string | undefined,
  noun = "session",
): { reason: StopReason; detail: string } | undefined {
  if (asked === undefined || named === undefined || named === asked) return undefined;
  return {
    reason: "resume_rejected",
    detail: `asked to resume ${noun} ${asked}, but the CLI started ${noun} ${named}`,
  };
}

/**
 * How the CLI ended, in words ("exited with code 1"). This and the two below are the words of
 * every CLI's verdict, in the ladder below and in a dialect's own rules.
 */
function exitWords(exit: ExitFacts): string {
  if (exit.signal) return `was killed by ${exit.signal}`;
  if (exit.exitCode !== null) return `exited with code ${exit.exitCode}`;
  return "ended";
}

/** The first line of a text (stderr refusing the arguments), at most 300 characters. */
export function firstLine(text: string): string {
  return text.trim().split("\n")[0]?.slice(0, 300) ?? "";
}

/** The last lines of stderr, where a crash usually says why. */
function stderrWords(stderr: string): string {
  const lines = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-3)
    .join(" / ");
  return lines ? `; stderr: ${lines.slice(-500)}` : "";
}

/** The words a rule of one CLI is given: how it ended ("exited with code 1"), and its stderr. */
export interface EndWords {
  how: string;
  stderr: string;
}

/** What one CLI's run showed, for the ladder its outcome is judged by (classifyExit). */
export interface ExitReading {
  /** The session the run was asked to resume, if any. */
  resumeSessionId?: string | undefined;
  /** Whether the CLI named the session it ran (an init line) before it ended. */
  started: boolean;
  /**
   * The CLI's own last word (a result line, turn.completed or turn.failed), when it printed one:
   * `answered` when it is an answer, and the verdict it makes.
   */
  verdict?: { answered: boolean; classify: () => Classification } | undefined;
  /** stderr's words when the session to resume is not there, and the detail they make. */
  noResume?: { pattern: RegExp; detail: (stderr: string) => string } | undefined;
  /** stderr's words when the CLI refuses its command line. */
  argumentError?: RegExp;
  /** A rule of the CLI's own for an end without its last word, before "never started" is asked. */
  ended?: (words: EndWords) => Classification | undefined;
  /** One after it (credentials refused along the way, an error on stderr). */
  lastly?: (words: EndWords) => Classification | undefined;
  /** The rung for a resumed run that never started, after "before": default "resuming session". */
  resuming?: string;
  /** How the last rung says what the CLI did not do: default "ending the turn". */
  without?: string;
}

/**
 * Every CLI's outcome, by one ladder; the dialect gives its own words and rules (ExitReading).
 * Order matters: a stop Tether made for a reason outranks what followed from the kill; the CLI's
 * own last word outranks a later cancel; resume failures are recognised before the rest because
 * the runner acts on them (retire the session, retry fresh).
 * 1. The CLI could not be started, or printed nothing (no_start): failed.
 * 2. Tether stopped it for refused credentials or a rejected resume.
 * 3. The CLI's last word: an answer stands even if a stop raced it; an error printed after the
 *    stop was asked for is the stop's doing.
 * 4. Any other stop (cancelled, timed out, stalled, turn limit).
 * The CLI ended by itself without its last word:
 * 5. stderr says the session to resume is not there: resume_rejected.
 * 6. stderr says the CLI refused its arguments: failed (not the session's fault).
 * 7. The CLI's own rule (`ended`).
 * 8. A resumed run that never named its session: resume_rejected.
 * 9. The CLI's own rule (`lastly`).
 * 10. Failed: "the CLI exited with code 1 without ending the turn; stderr: …".
 */
export function classifyExit(exit: ExitFacts, cli: ExitReading): Classification {
  const { stop } = exit;
  const id = cli.resumeSessionId;
  if (exit.spawnError) return { kind: "failed", detail: exit.spawnError };
  if (stop?.reason === "no_start") return { kind: "failed", detail: stop.detail };
  if (stop?.reason === "auth_failed" || stop?.reason === "resume_rejected") {
    return { kind: stop.reason, detail: stop.detail };
  }
  const { verdict } = cli;
  if (verdict && (verdict.answered || !stop || !exit.resultAfterStop)) return verdict.classify();
  if (stop) return { kind: stop.reason, detail: stop.detail };

  const words: EndWords = { how: exitWords(exit), stderr: exit.stderrTail };
  const { how, stderr } = words;
  if (id !== undefined && cli.noResume?.pattern.test(stderr)) {
    return { kind: "resume_rejected", detail: cli.noResume.detail(stderr) };
  }
  if (cli.argumentError?.test(stderr)) {
    return {
      kind: "failed",
      detail: `the CLI refused its arguments (${how}): ${firstLine(stderr)}`,
    };
  }
  const own = cli.ended?.(words);
  if (own) return own;
  if (id !== undefined && !cli.started) {
    return {
      kind: "resume_rejected",
      detail: `the CLI ${how} before ${cli.resuming ?? "resuming session"} ${id}${stderrWords(stderr)}`,
    };
  }
  const last = cli.lastly?.(words);
  if (last) return last;
  return {
    kind: "failed",
    detail: `the CLI ${how} without ${cli.without ?? "ending the turn"}${stderrWords(stderr)}`,
  };
}
