/**
 * What an agent's line comments become on GitHub: which land on the diff as GitHub computes it
 * (GET /pulls/{n}/files), and which go into the review's body instead (GitHub refuses a whole
 * review for one comment on a line outside the diff). Pure, with table tests
 * (test/unit/review-plan.test.ts).
 */
import { z } from "zod";

/** One comment the agent asked for (a line of the tool's output file). */
export const LineComment = z.object({
  kind: z.literal("comment"),
  path: z.string().min(1).max(1000),
  line: z.number().int().min(1),
  side: z.enum(["RIGHT", "LEFT"]).default("RIGHT"),
  start_line: z.number().int().min(1).optional(),
  body: z.string().min(1).max(16_000),
});
export type LineComment = z.infer<typeof LineComment>;

const RequestChanges = z.object({ kind: z.literal("request_changes"), reason: z.string().min(1) });
const ToolRecord = z.discriminatedUnion("kind", [LineComment, RequestChanges]);

/** What the agent asked for in one turn. */
export interface ReviewRequest {
  comments: LineComment[];
  /** Why the agent asked to request changes; null when it did not. */
  requestChanges: string | null;
}

/** At most this many comments are read from one turn's file (the tool caps it too). */
export const MAX_COMMENTS = 50;

/**
 * The tool's output file as records. A line that is not one (the agent can write the file
 * itself) is skipped and counted; the caller logs it.
 */
export function readToolOutput(text: string): ReviewRequest & { skipped: number } {
  const out: ReviewRequest & { skipped: number } = {
    comments: [],
    requestChanges: null,
    skipped: 0,
  };
  for (const raw of text.split("\n")) {
    if (!raw.trim()) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      out.skipped++;
      continue;
    }
    const r = ToolRecord.safeParse(parsed);
    if (!r.success) {
      out.skipped++;
      continue;
    }
    if (r.data.kind === "request_changes") out.requestChanges ??= r.data.reason;
    else if (r.data.start_line !== undefined && r.data.start_line >= r.data.line) out.skipped++;
    else if (out.comments.length >= MAX_COMMENTS) out.skipped++;
    else out.comments.push(r.data);
  }
  return out;
}

/** The lines of one file a review comment may sit on, per side of the diff. */
export interface CommentableLines {
  /** The pull request's version: added and context lines. */
  RIGHT: Set<number>;
  /** The base version: removed and context lines. */
  LEFT: Set<number>;
}

/** Reads a unified diff's hunks (a `patch` of GET /pulls/{n}/files). */
export function commentableLines(patch: string | undefined | null): CommentableLines {
  const out: CommentableLines = { RIGHT: new Set(), LEFT: new Set() };
  if (!patch) return out;
  let oldLine = 0;
  let newLine = 0;
  let inHunk = false;
  for (const line of patch.split("\n")) {
    const h = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (h) {
      oldLine = Number(h[1]);
      newLine = Number(h[2]);
      inHunk = true;
      continue;
    }
    if (!inHunk) continue;
    const c = line[0];
    if (c === "+") out.RIGHT.add(newLine++);
    else if (c === "-") out.LEFT.add(oldLine++);
    else if (c === " ") {
      out.LEFT.add(oldLine++);
      out.RIGHT.add(newLine++);
    }
    // "\ No newline at end of file" and anything else: no line of either file.
  }
  return out;
}

/** One file of GET /pulls/{n}/files, the fields used here. */
export interface PullFile {
  filename: string;
  patch?: string | undefined | null;
}

/** One comment of POST /pulls/{n}/reviews. */
export interface ReviewComment {
  path: string;
  line: number;
  side: "RIGHT" | "LEFT";
  start_line?: number;
  start_side?: "RIGHT" | "LEFT";
  body: string;
}

export interface ReviewPlan {
  event: "COMMENT" | "REQUEST_CHANGES";
  /** The review's body: the comments that did not land, and why changes are requested. */
  body: string;
  comments: ReviewComment[];
  /** The agent's comments that did not land on the diff (they are in `body`). */
  outside: LineComment[];
}

/**
 * Places each comment: on the diff when every line it covers is one GitHub can comment on,
 * else in the body. `allowChanges`: the agent's setting lets it request changes.
 */
export function planReview(
  req: ReviewRequest,
  files: PullFile[],
  allowChanges: boolean,
): ReviewPlan {
  const lines = new Map<string, CommentableLines>();
  for (const f of files) lines.set(f.filename, commentableLines(f.patch));
  const comments: ReviewComment[] = [];
  const outside: LineComment[] = [];
  for (const c of req.comments) {
    const on = lines.get(c.path)?.[c.side];
    const first = c.start_line ?? c.line;
    let lands = on !== undefined;
    for (let n = first; lands && n <= c.line; n++) lands = on!.has(n);
    if (!lands) {
      outside.push(c);
      continue;
    }
    comments.push({
      path: c.path,
      line: c.line,
      side: c.side,
      ...(c.start_line !== undefined ? { start_line: c.start_line, start_side: c.side } : {}),
      body: c.body,
    });
  }
  const changes = allowChanges && req.requestChanges !== null;
  return {
    event: changes ? "REQUEST_CHANGES" : "COMMENT",
    body: reviewBody(outside, changes ? req.requestChanges : null),
    comments,
    outside,
  };
}

/** Every comment moved into the body (GitHub refused them on the diff). */
export function allInBody(plan: ReviewPlan, req: ReviewRequest): ReviewPlan {
  const changes = plan.event === "REQUEST_CHANGES" ? req.requestChanges : null;
  return { ...plan, comments: [], outside: req.comments, body: reviewBody(req.comments, changes) };
}

/** Where a comment is, as `path:line` or `path:start-line` (LEFT: of the base version). */
export function placeOf(c: Pick<LineComment, "path" | "line" | "start_line" | "side">): string {
  const at = c.start_line !== undefined ? `${c.start_line}-${c.line}` : String(c.line);
  return `${c.path}:${at}${c.side === "LEFT" ? " (base version)" : ""}`;
}

/**
 * A value of the agent's as the text of a one-backtick code span: a backtick would close it, and
 * a blank line (any line break: GitHub's markdown reads \r, U+2028 and the other controls too)
 * would end it, letting the rest be markdown (a mention, a link, an image).
 */
function inCodeSpan(s: string): string {
  return s.replace(/`/g, "'").replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, " ");
}

function reviewBody(outside: LineComment[], changes: string | null): string {
  const parts: string[] = [];
  if (changes) parts.push(`**Changes requested.** ${changes}`);
  if (outside.length) {
    parts.push(
      outside.length === 1
        ? "A comment on a line outside this pull request's diff:"
        : "Comments on lines outside this pull request's diff:",
    );
    for (const c of outside) parts.push(`**\`${inCodeSpan(placeOf(c))}\`**\n\n${c.body}`);
  }
  return parts.join("\n\n");
}
