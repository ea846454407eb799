/**
 * The thread the savings benchmark plays: an issue body, follow-up comments and the bot's
 * answers, as readable text of chosen sizes. Deterministic (a seeded generator), so both arms
 * and every run get the same words.
 */

const SUBJECTS = [
  "The line splitter",
  "The CSV importer",
  "The streaming reader",
  "Our nightly export job",
  "The parser in src/split.js",
  "The batch uploader",
  "The log tailer",
  "The config loader",
];
const FINDINGS = [
  "drops the last line when the input has no trailing newline",
  "keeps a stray carriage return at the end of every field on Windows files",
  "reads the whole file into memory before splitting it",
  "treats an empty final line as a record with one empty column",
  "counts lines differently from wc -l on the same input",
  "loses the fragment that straddles two chunks of a stream",
  "reports the wrong line number after a blank line",
  "gives up silently when a line is longer than the buffer",
];
const DETAILS = [
  "I reproduced it with a three-line file and printed every record as it came out.",
  "It happens on version 2.3 and on the main branch, so it is not a regression from last week.",
  "The unit tests pass because every fixture happens to end with a newline.",
  "Customers noticed because the totals row at the bottom of their exports went missing.",
  "A quick look at the loop suggests the last fragment is only flushed when a separator follows it.",
  "Splitting on a regular expression instead of a single character did not change anything.",
  "The same input read through the command-line tool comes out right, which points at the library.",
  "Files produced by spreadsheet programs are the usual trigger, since they often omit the final newline.",
  "Memory use stays flat, so whatever goes wrong happens at the very end of the input.",
  "Running it under the debugger shows the buffer still holds the last line when the loop exits.",
];
const ASKS = [
  "Could you explain where the last line goes missing?",
  "What would a minimal fix look like, and where should it live?",
  "Please suggest a test that fails today and passes after the fix.",
  "Is the Windows line-ending problem the same bug or a separate one?",
  "How should the streaming reader handle a fragment split across two chunks?",
  "Would it be safer to keep the current behaviour behind a flag?",
  "Can you check whether the line numbers in error messages are affected too?",
  "What should happen to an empty final line: a record, or nothing?",
  "Please review the approach in my previous comment before I open a pull request.",
  "Summarise what we decided so far so I can put it in the changelog.",
];

/** A small seeded generator (mulberry32): the same seed gives the same text. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Paragraphs of plain prose, about `bytes` long (never more), with no mentions or markup. */
export function prose(bytes: number, seed: number): string {
  const next = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const paragraphs: string[] = [];
  let paragraph: string[] = [];
  let size = 0;
  for (;;) {
    const sentence = next() < 0.4 ? `${pick(SUBJECTS)} ${pick(FINDINGS)}.` : pick(DETAILS);
    const cost = sentence.length + 1 + (paragraph.length === 0 && paragraphs.length > 0 ? 1 : 0);
    if (size + cost > bytes) break;
    paragraph.push(sentence);
    size += cost;
    if (paragraph.length >= 4 + Math.floor(next() * 3)) {
      paragraphs.push(paragraph.join(" "));
      paragraph = [];
    }
  }
  if (paragraph.length) paragraphs.push(paragraph.join(" "));
  return paragraphs.join("\n\n");
}

export interface ThreadPlan {
  title: string;
  body: string;
  /** The follow-up comments, in order, each addressed to the agent. */
  comments: Array<{ author: string; body: string }>;
}

/** An issue body of about bodyBytes and `turns` comments of about commentBytes each. */
export function planThread(o: {
  turns: number;
  bodyBytes: number;
  commentBytes: number;
  mention: string;
}): ThreadPlan {
  const authors = ["alice", "bob", "carol"];
  const comments = Array.from({ length: o.turns }, (_, i) => {
    const head = `${o.mention} ${ASKS[i % ASKS.length]} (comment ${i + 1})\n\n`;
    return {
      author: authors[i % authors.length]!,
      body: head + prose(Math.max(0, o.commentBytes - head.length), 1000 + i),
    };
  });
  return {
    title: "The line splitter drops the last line of files without a trailing newline",
    body: prose(o.bodyBytes, 1),
    comments,
  };
}

/** The fake model's answer to a request: readable, about `bytes` long, numbered. */
export function answerText(bytes: number, n: number): string {
  const head = `Answer ${n}: `;
  const sentences = [
    "The last line is lost because the loop only emits a fragment when a separator follows it.",
    "Flushing the remaining buffer after the loop fixes it, as long as an empty final fragment is skipped.",
    "A test that splits a three-line input without a trailing newline fails today and passes with that change.",
    "Carriage returns are a separate issue and deserve their own test.",
    "Nothing in the repository was changed in this turn.",
  ];
  let out = head;
  for (let i = 0; out.length < bytes; i++) {
    const s = sentences[i % sentences.length]!;
    if (out.length + s.length + 1 > bytes) break;
    out += (out === head ? "" : " ") + s;
  }
  return out;
}
