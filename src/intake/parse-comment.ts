/**
 * Comment parsing: which agents a comment addresses, with which commands, and what it asks.
 *
 * A pure function over the comment body. It must never throw and must stay linear in the
 * body's length: bodies come from anyone who can comment, and GitHub allows 65 536 characters
 * (issue bodies and tests go further). Every scan below is a single pass or a regex that can
 * only start at one character class, so a 1 MB body parses in milliseconds.
 *
 * What counts as prose follows how GitHub renders Markdown, closely enough that a mention you
 * can see as a mention addresses the agent and one you can see inside code or a quote does not:
 * fenced code blocks (``` and ~~~), indented code blocks, inline code spans, block quotes
 * (`>`, with their lazy continuation lines) and HTML comments are not prose.
 */

export const COMMANDS = [
  "fresh",
  "cancel",
  "status",
  "help",
  "model",
  "sessions",
  "resume",
  "from",
  "plan",
  "go",
] as const;
export type Command = (typeof COMMANDS)[number];

/** Commands that take one word after them: `/model <name>`, `/resume <id-prefix>`, `/from <agent>`. */
export const ARG_COMMANDS = ["model", "resume", "from"] as const;
export type ArgCommand = (typeof ARG_COMMANDS)[number];
/** Each argument as written (backticks around it dropped); "" when the command has none. */
export type CommandArgs = Partial<Record<ArgCommand, string>>;

/** An agent and the mention that addresses it, e.g. `{ agent: "tether", mention: "@tether" }`. */
export interface AgentMention {
  agent: string;
  mention: string;
}

export interface Addressed {
  agent: string;
  /** Commands given to this agent, in the order written, without repeats. */
  commands: Command[];
  /** The arguments of its argument commands (the first one written of each); absent: none. */
  args?: CommandArgs;
}

export interface ParsedComment {
  /** Agents the comment addresses, in order of first mention, each once. */
  addressed: Addressed[];
  /**
   * The request: the body without command tokens, and without the mentions that open a line
   * (`@tether please fix this` asks "please fix this"; `Could @tether look?` keeps its words).
   * Code blocks and quotes stay: they are part of what was asked.
   */
  request: string;
}

/** A GitHub login-like name after `@`: letters, digits and inner hyphens, at most 39 characters. */
const MENTION_RE = /@([A-Za-z0-9][A-Za-z0-9-]{0,38})/g;
/** Characters that, just before `@`, make it part of a word, path or address rather than a mention. */
const BEFORE_MENTION = /[A-Za-z0-9_.+/\\@-]/;
/** Characters that, just after the name, mean the name goes on (a longer login, a team, a path). */
const AFTER_MENTION = /[A-Za-z0-9_/@-]/;
const COMMAND_SET: ReadonlySet<string> = new Set(COMMANDS);
const ARG_COMMAND_SET: ReadonlySet<string> = new Set(ARG_COMMANDS);
/** The longest argument read: a model id is at most 100 characters. */
const MAX_ARG = 200;

/**
 * Lower-cased names of everything that looks like a mention in prose. The webhook path uses it
 * as a cheap pre-check, before any repo config is known (agents' mentions are configurable).
 */
export function mentionedNames(body: string): string[] {
  const hidden = hiddenMask(body);
  const names = new Set<string>();
  for (const m of mentionsIn(body, hidden)) names.add(m.name);
  return [...names];
}

/**
 * Names mentioned in `after` that `before` did not mention: an edit that returns some may
 * address an agent for the first time (a mistyped mention, fixed), and then starts a turn.
 */
export function addedMentionNames(before: string, after: string): string[] {
  const had = new Set(mentionedNames(before));
  return mentionedNames(after).filter((n) => !had.has(n));
}

export function parseComment(body: string, agents: readonly AgentMention[]): ParsedComment {
  const byName = new Map<string, string>();
  for (const a of agents) byName.set(a.mention.replace(/^@/, "").toLowerCase(), a.agent);
  const hidden = hiddenMask(body);

  const addressed = new Map<string, Command[]>();
  const argsOf = new Map<string, CommandArgs>();
  /** Where the last command's argument ended: a mention inside one (`/from @tether`) is not one. */
  let consumed = 0;
  /** Spans of the body that the request leaves out. */
  const cut: Array<[number, number]> = [];
  const all = mentionsIn(body, hidden);
  let i = 0;
  while (i < all.length) {
    const first = all[i]!;
    const agent = byName.get(first.name);
    if (agent === undefined || first.start < consumed) {
      i++;
      continue;
    }
    // A group: mentions of known agents separated only by blanks or commas, then commands.
    const group: string[] = [agent];
    let end = first.end;
    let j = i + 1;
    for (;;) {
      const next = all[j];
      if (!next) break;
      const nextAgent = byName.get(next.name);
      if (nextAgent === undefined || !onlySeparators(body, end, next.start)) break;
      group.push(nextAgent);
      end = next.end;
      j++;
    }
    const leading = startsLine(body, first.start);
    let pos = skipBlanks(body, end);
    if (body[pos] === ":" || body[pos] === ",") pos = skipBlanks(body, pos + 1);
    const commands: Command[] = [];
    const args: CommandArgs = {};
    for (;;) {
      const cmd = commandAt(body, hidden, pos);
      if (!cmd) break;
      let cmdEnd = cmd.end;
      if (ARG_COMMAND_SET.has(cmd.command)) {
        // "/model," ends the command: what follows is the request, not its argument.
        const arg = /[.,;:!?]/.test(body[cmd.end - 1]!) ? undefined : argumentAt(body, cmd.end);
        const name = cmd.command as ArgCommand;
        if (args[name] === undefined) args[name] = arg?.value ?? "";
        if (arg) cmdEnd = arg.end;
        consumed = cmdEnd;
      }
      if (!commands.includes(cmd.command)) commands.push(cmd.command);
      if (!leading) cut.push([pos, skipBlanks(body, cmdEnd)]);
      pos = skipBlanks(body, cmdEnd);
    }
    // "@tether go" alone on its line approves a plan as `/go` does (a line that goes on is a
    // request that starts with the word "go").
    if (leading && !commands.length) {
      const go = GO_WORD.exec(body.slice(pos, lineEndAt(body, pos)));
      if (go && !hidden[pos]) {
        commands.push("go");
        pos += go[0].length;
      }
    }
    if (leading) cut.push([first.start, pos]);
    for (const name of group) {
      const seen = addressed.get(name);
      if (!seen) addressed.set(name, [...commands]);
      else for (const c of commands) if (!seen.includes(c)) seen.push(c);
      if (Object.keys(args).length) argsOf.set(name, { ...args, ...argsOf.get(name) });
    }
    i = j;
  }

  return {
    addressed: [...addressed].map(([agent, commands]) => {
      const args = argsOf.get(agent);
      return args ? { agent, commands, args } : { agent, commands };
    }),
    request: trimBlankLines(addressed.size ? cutSpans(body, cut) : body),
  };
}

/**
 * What an edit asks of agents: the agents `after` addresses that `before` did not, with their
 * commands. An agent the comment already addressed was asked before: its edit changes that
 * request (or the session's history), it does not make a new one.
 */
export function newlyAddressed(
  before: string,
  after: string,
  agents: readonly AgentMention[],
): Addressed[] {
  const had = new Set(parseComment(before, agents).addressed.map((a) => a.agent));
  return parseComment(after, agents).addressed.filter((a) => !had.has(a.agent));
}

interface Found {
  name: string;
  start: number;
  end: number;
}

function mentionsIn(body: string, hidden: Uint8Array): Found[] {
  const found: Found[] = [];
  MENTION_RE.lastIndex = 0;
  for (let m = MENTION_RE.exec(body); m; m = MENTION_RE.exec(body)) {
    const start = m.index;
    const name = m[1]!;
    const end = start + 1 + name.length;
    if (hidden[start]) continue;
    if (start > 0 && BEFORE_MENTION.test(body[start - 1]!)) continue;
    const after = body[end];
    if (after !== undefined && AFTER_MENTION.test(after)) continue;
    // "@tether." ends a sentence; "@tether.dev" is a domain.
    if (after === "." && /[A-Za-z0-9_]/.test(body[end + 1] ?? "")) continue;
    // GitHub logins never end in a hyphen, so "@tether-" is not a mention of anyone.
    if (name.endsWith("-")) continue;
    found.push({ name: name.toLowerCase(), start, end });
  }
  return found;
}

function commandAt(
  body: string,
  hidden: Uint8Array,
  pos: number,
): { command: Command; end: number } | undefined {
  if (body[pos] !== "/" || hidden[pos]) return undefined;
  let end = pos + 1;
  while (end < body.length && end - pos <= 8 && /[a-z]/i.test(body[end]!)) end++;
  const word = body.slice(pos + 1, end).toLowerCase();
  if (!COMMAND_SET.has(word)) return undefined;
  // "/fresh," and "/fresh." end a command; "/fresh.txt" and "/status/x" are something else.
  const after = body[end];
  const endsHere =
    after === undefined ||
    /[\s,;:!?)]/.test(after) ||
    (after === "." && /^\s?$/.test(body[end + 1] ?? ""));
  if (!endsHere) return undefined;
  // Punctuation right after a command belongs to it: "@tether /fresh." asks nothing more.
  if (after !== undefined && /[.,;:!?]/.test(after)) end++;
  return { command: word as Command, end };
}

/**
 * The word after an argument command, on its line: up to the next blank, without backticks
 * around it or punctuation after it ("/model `opus`," names opus). Undefined: none there.
 */
function argumentAt(body: string, from: number): { value: string; end: number } | undefined {
  const start = skipBlanks(body, from);
  let end = start;
  while (end < body.length && end - start <= MAX_ARG && !/\s/.test(body[end]!)) end++;
  if (end === start) return undefined;
  const value = body
    .slice(start, end)
    .replace(/[.,;:!?)]+$/, "")
    .replace(/^`+|`+$/g, "");
  return { value, end };
}

/** Drop blank lines at both ends, keeping the first line's indentation (it may be code). */
function trimBlankLines(text: string): string {
  return text.replace(/^(?:[ \t]*\r?\n)+/, "").trimEnd();
}

/** The bare word `go` as all that follows a leading mention on its line. */
const GO_WORD = /^go[.!]?[ \t]*\r?$/i;

function lineEndAt(body: string, pos: number): number {
  const nl = body.indexOf("\n", pos);
  return nl < 0 ? body.length : nl;
}

function onlySeparators(body: string, from: number, to: number): boolean {
  if (to - from > 16) return false;
  return /^[ \t]*,?[ \t]*$/.test(body.slice(from, to)) && to > from;
}

function skipBlanks(body: string, pos: number): number {
  while (body[pos] === " " || body[pos] === "\t") pos++;
  return pos;
}

/** True when only blanks precede `pos` on its line. */
function startsLine(body: string, pos: number): boolean {
  for (let p = pos - 1; p >= 0; p--) {
    const c = body[p];
    if (c === "\n") return true;
    if (c !== " " && c !== "\t" && c !== "\r") return false;
  }
  return true;
}

function cutSpans(body: string, spans: Array<[number, number]>): string {
  if (!spans.length) return body;
  spans.sort((a, b) => a[0] - b[0]);
  let out = "";
  let at = 0;
  for (const [s, e] of spans) {
    if (s < at) continue;
    out += body.slice(at, s);
    at = e;
  }
  return out + body.slice(at);
}

// ---------------------------------------------------------------------------------------------
// What is not prose

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const QUOTE = /^ {0,3}>/;
const HTML_COMMENT_OPEN = /^ {0,3}<!--/;
const LIST_ITEM = /^ {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)/;
/** Lines that start a block of their own, so they cannot lazily continue a quote. */
const BLOCK_START =
  /^ {0,3}(?:[-+*][ \t]|\d{1,9}[.)][ \t]|#{1,6}(?:[ \t]|$)|`{3,}|~{3,}|<|(?:[-*_][ \t]*){3,}$)/;

/**
 * One flag per UTF-16 unit of `body`: 1 where the text is code, quote or HTML comment.
 * Line by line for blocks, then inline (code spans, HTML comments) within each prose paragraph.
 */
export function hiddenMask(body: string): Uint8Array {
  const hidden = new Uint8Array(body.length);
  const nextCommentOpen = nextIndexOf(body, "<!--");
  const nextCommentClose = nextIndexOf(body, "-->");
  let fence: { char: string; len: number } | undefined;
  let inQuote = false;
  let inList = false;
  let prevBlank = true;
  let prevIndentedCode = false;
  let paraStart = -1;
  let paraEnd = -1;
  const flushParagraph = () => {
    if (paraStart >= 0)
      hideInline(body, paraStart, paraEnd, hidden, nextCommentOpen, nextCommentClose);
    paraStart = -1;
  };

  let lineStart = 0;
  while (lineStart <= body.length) {
    let lineEnd = body.indexOf("\n", lineStart);
    if (lineEnd < 0) lineEnd = body.length;
    const line = body.slice(lineStart, lineEnd);
    const blank = line.trim() === "";
    const hide = () => hidden.fill(1, lineStart, lineEnd);

    if (fence) {
      hide();
      const close = FENCE_OPEN.exec(line);
      if (
        close &&
        close[1]![0] === fence.char &&
        close[1]!.length >= fence.len &&
        close[2]!.trim() === ""
      )
        fence = undefined;
      prevBlank = false;
      prevIndentedCode = false;
    } else if (blank) {
      flushParagraph();
      inQuote = false;
      prevBlank = true;
      prevIndentedCode = false;
    } else {
      const indent = indentWidth(line);
      const open = FENCE_OPEN.exec(line);
      const commentAt = HTML_COMMENT_OPEN.test(line) ? body.indexOf("<!--", lineStart) : -1;
      const commentEnd = commentAt >= 0 ? nextCommentClose(commentAt + 4) : -1;
      if (open && !(open[1]![0] === "`" && open[2]!.includes("`"))) {
        flushParagraph();
        fence = { char: open[1]![0]!, len: open[1]!.length };
        inQuote = false;
        hide();
      } else if (commentAt >= 0 && (commentEnd < 0 || commentEnd + 3 > lineEnd)) {
        // An HTML comment block (issue templates use them) runs across blank lines to its `-->`.
        flushParagraph();
        inQuote = false;
        const end = commentEnd < 0 ? body.length : commentEnd + 3;
        hidden.fill(1, lineStart, end);
        const after = body.indexOf("\n", end);
        if (after < 0) break;
        lineStart = after + 1;
        prevBlank = false;
        prevIndentedCode = false;
        continue;
      } else if (QUOTE.test(line) || (inQuote && !BLOCK_START.test(line))) {
        // A quote line, or a lazy continuation of the quoted paragraph (GitHub renders it inside).
        flushParagraph();
        inQuote = true;
        hide();
      } else if (indent >= 4 && (prevBlank || prevIndentedCode) && paraStart < 0 && !inList) {
        hide();
        prevIndentedCode = true;
        prevBlank = false;
        lineStart = lineEnd + 1;
        continue;
      } else {
        inQuote = false;
        if (LIST_ITEM.test(line)) inList = true;
        else if (indent < 2 && prevBlank) inList = false;
        if (paraStart < 0) paraStart = lineStart;
        paraEnd = lineEnd;
      }
      prevBlank = false;
      prevIndentedCode = false;
    }
    lineStart = lineEnd + 1;
  }
  flushParagraph();
  return hidden;
}

/**
 * `indexOf(needle, p)` for non-decreasing `p`, remembering the last hit: each stretch of the
 * body is searched once, which keeps many small paragraphs from rescanning the rest each time.
 */
function nextIndexOf(body: string, needle: string): (p: number) => number {
  let base = Number.POSITIVE_INFINITY;
  let hit = -1;
  return (p) => {
    if (p >= base && (hit < 0 || hit >= p)) return hit;
    base = p;
    hit = body.indexOf(needle, p);
    return hit;
  };
}

function indentWidth(line: string): number {
  let w = 0;
  for (let i = 0; i < line.length && w < 4; i++) {
    const c = line[i];
    if (c === " ") w++;
    else if (c === "\t") w += 4 - (w % 4);
    else break;
  }
  return w;
}

/**
 * Code spans and HTML comments inside one paragraph [from, to). A code span opens with a run of
 * n backticks and closes at the next run of exactly n; `nextSame` finds that run in O(1), so the
 * whole pass is linear even for a paragraph of unmatched backticks.
 */
function hideInline(
  body: string,
  from: number,
  to: number,
  hidden: Uint8Array,
  nextCommentOpen: (p: number) => number,
  nextCommentClose: (p: number) => number,
): void {
  // A backslash before a run escapes its first backtick, but only for opening a span: inside
  // a span backslashes are literal, so `a\` is a complete span (CommonMark).
  const runs: Array<{ start: number; len: number; escaped: boolean }> = [];
  for (let p = from; p < to; p++) {
    if (body[p] !== "`") continue;
    let e = p;
    while (e < to && body[e] === "`") e++;
    const escaped = p > from && body[p - 1] === "\\" && !(p - 1 > from && body[p - 2] === "\\");
    runs.push({ start: p, len: e - p, escaped });
    p = e - 1;
  }
  // For each run, the next run of the length it opens with: len, or len - 1 when escaped.
  const nextSame = new Int32Array(runs.length).fill(-1);
  const lastByLen = new Map<number, number>();
  for (let k = runs.length - 1; k >= 0; k--) {
    const run = runs[k]!;
    nextSame[k] = lastByLen.get(run.escaped ? run.len - 1 : run.len) ?? -1;
    lastByLen.set(run.len, k);
  }

  let k = 0;
  let p = from;
  while (p < to) {
    const nextRun = k < runs.length ? runs[k]!.start : to;
    const comment = nextCommentOpen(p);
    if (comment >= 0 && comment < nextRun && comment < to) {
      // An inline HTML comment cannot leave its paragraph: unclosed, it hides the rest of it.
      const close = nextCommentClose(comment + 4);
      const end = close < 0 || close + 3 > to ? to : close + 3;
      hidden.fill(1, comment, end);
      p = end;
      while (k < runs.length && runs[k]!.start < p) k++;
      continue;
    }
    if (k >= runs.length) return;
    const run = runs[k]!;
    const j = nextSame[k]!;
    if (j < 0) {
      k++;
      p = run.start + run.len;
      continue;
    }
    const closing = runs[j]!;
    hidden.fill(1, run.start + (run.escaped ? 1 : 0), closing.start + closing.len);
    p = closing.start + closing.len;
    k = j + 1;
  }
}
