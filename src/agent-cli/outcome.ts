/**
 * How any CLI's run ended, in the engine's words: why the engine stopped it (StopReason), how
 * the child exited (ExitFacts), the verdict a dialect gives (Classification), and the phrases
 * every dialect's verdict is written with.
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

/**
 * How the CLI ended, in words ("exited with code 1"). This and the two below are the words of
 * every CLI's verdict, used by each dialect's classifier.
 */
export function exitWords(exit: ExitFacts): string {
  if (exit.signal) return `was killed by ${exit.signal}`;
  if (exit.exitCode !== null) return `exited with code ${exit.exitCode}`;
  return "ended";
}

/** The first line of a text (stderr refusing the arguments), at most 300 characters. */
export function firstLine(text: string): string {
  return text.trim().split("\n")[0]?.slice(0, 300) ?? "";
}

/** The last lines of stderr, where a crash usually says why. */
export function stderrWords(stderr: string): string {
  const lines = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-3)
    .join(" / ");
  return lines ? `; stderr: ${lines.slice(-500)}` : "";
}
