/**
 * What the end-to-end files ask of a stack's thread and repository: a new issue, the answer
 * Tether posted for a task, a file at a ref of the stand-in's repository.
 */
import { execFileSync } from "node:child_process";
import { expect } from "vitest";
import { REPO, type Stack } from "./e2e-stack.js";

/** An issue by alice titled `title`, its body naming it. Returns its number. */
export function newIssue(stack: Stack, title: string): number {
  return stack.gh.addIssue({ repo: REPO, title, body: `Body of "${title}".`, user: "alice" })
    .number as number;
}

/** The one comment Tether posted on `thread` for `task` (a second one fails the test). */
export function answerOf(stack: Stack, thread: number, task: Record<string, unknown>): string {
  const posted = stack.taskComments(thread, task.id as number);
  expect(posted).toHaveLength(1);
  return String(posted[0]!.body);
}

/** A file's content at `ref` in the stand-in's repository (undefined: absent). */
export function fileAt(stack: Stack, ref: string, file: string): string | undefined {
  try {
    return execFileSync("git", ["-C", stack.gh.barePath(REPO), "show", `${ref}:${file}`], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch {
    return undefined;
  }
}

/** An issue by alice about the parser dropping a file's last line. Returns its number. */
export function parserIssue(stack: Stack): number {
  return stack.gh.addIssue({
    repo: REPO,
    title: "Parser drops the last line",
    body: "Feeding a file without a trailing newline loses its last line.",
    user: "alice",
  }).number as number;
}

/** A reply Tether posted on `issue` containing `contains`, once it is there (30 s). */
export async function replyOn(stack: Stack, issue: number, contains: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = stack.gh
      .comments(REPO, issue)
      .map((c) => String(c.body))
      .find((b) => b.includes(contains));
    if (found) return found;
    if (Date.now() > deadline)
      throw new Error(
        `no reply containing ${JSON.stringify(contains)} in ${JSON.stringify(stack.gh.comments(REPO, issue).map((c) => c.body))}`,
      );
    await new Promise((r) => setTimeout(r, 150));
  }
}
