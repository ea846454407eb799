/**
 * What the agent reads when a pull request review, or a comment on a line of its diff, asks for
 * it. A review comment's words often only make sense next to its line ("@tether rename this"),
 * so the stored request starts with a note saying where it sits: the file, the line or lines,
 * which side of the diff and at which commit, so the agent can open the code it is about.
 *
 * The note goes into the stored body because that body is what every turn's prompt shows as
 * the request (cold or resumed), and an edit of the comment rebuilds it the same way. It is
 * built from GitHub's structured fields only, never from the diff hunk: the hunk is code written
 * by whoever opened the pull request, and the request is the one part of a prompt the agent
 * treats as an instruction.
 */
import type { Review, ReviewComment } from "./payloads.js";

/** Pure: the request body for a review comment, the comment's own words after the note. */
export function reviewCommentRequest(c: ReviewComment): string {
  return withNote(describeReviewCommentPlace(c), c.body ?? "");
}

/** Pure: the request body for a submitted review. */
export function reviewRequest(r: Review): string {
  return withNote(describeReview(r), r.body ?? "");
}

export function describeReviewCommentPlace(c: ReviewComment): string {
  const file = codeSpan(c.path);
  const commit = commitRef(c.line != null ? c.commit_id : (c.original_commit_id ?? c.commit_id));
  const at = commit ? ` at commit ${commit}` : "";
  if (c.subject_type === "file")
    return `[Review comment on the file ${file} as a whole, in the diff${at}.]`;

  // `line` is null once the pull request has moved on from the commented code (GitHub shows it
  // as outdated); the original numbers still say where it was, at the original commit.
  const outdated = c.line == null && c.original_line != null;
  const end = c.line ?? c.original_line;
  const start = c.line != null ? c.start_line : c.original_start_line;
  if (end == null) return `[Review comment on ${file}, in the diff${at}.]`;
  const lines = start != null && start !== end ? `lines ${start}-${end}` : `line ${end}`;
  const side =
    c.side === "LEFT"
      ? "the base version (the left, removed side of the diff)"
      : "the pull request's version (the right side of the diff)";
  return `[Review comment on ${file}, ${lines} of ${side}${at}${
    outdated ? "; outdated: the pull request has changed this code since" : ""
  }.]`;
}

export function describeReview(r: Review): string {
  const commit = commitRef(r.commit_id);
  const state = REVIEW_STATES[r.state.toLowerCase()];
  return `[Pull request review${state ? ` (${state})` : ""}${commit ? ` at commit ${commit}` : ""}.]`;
}

const REVIEW_STATES: Record<string, string> = {
  approved: "approved",
  changes_requested: "changes requested",
  commented: "commented",
};

function withNote(note: string, body: string): string {
  return `${note}\n\n${body}`;
}

/** A git object id, or nothing: the field comes from outside and ends up in a prompt. */
function commitRef(sha: string | null | undefined): string | null {
  return sha && /^[0-9a-f]{7,64}$/i.test(sha) ? sha : null;
}

/**
 * A path as Markdown inline code, whatever it holds: git allows backticks and even newlines in
 * file names, and neither may break the note's one line or end the code span early.
 */
function codeSpan(path: string): string {
  const flat = [...path]
    .filter((ch) => ch >= " " && ch !== "\u007f")
    .join("")
    .slice(0, 500);
  const longest = Math.max(0, ...(flat.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  const pad = flat.startsWith("`") || flat.endsWith("`") ? " " : "";
  return `${fence}${pad}${flat || "(unnamed file)"}${pad}${fence}`;
}
