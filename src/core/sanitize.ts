/**
 * Text from outside (GitHub, the repository, its config) goes into a prompt only through
 * promptText (a body: many lines between markers) or promptValue (one value: a branch, title,
 * login, URL, path, commit subject), both built on sanitizeForPrompt. Text from GitHub goes into
 * a prompt only after this: hidden HTML comments (invisible on
 * github.com, visible to the model — a classic hiding place for injected instructions) and
 * invisible or bidirectional-control characters (which can make text read differently to a
 * reviewer than to the model) are removed.
 */

// Zero-width and invisible formatting characters, bidi embeddings/overrides/isolates, the BOM,
// soft hyphen, and the Unicode "tag" block used for invisible ASCII smuggling.
const INVISIBLE =
  /[\u00AD\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFEFF\u{E0000}-\u{E007F}]/gu;

// An unterminated comment hides everything after it on github.com, so it is removed to the end.
const HTML_COMMENT = /<!--[\s\S]*?(?:-->|$)/g;

export function sanitizeForPrompt(text: string): string {
  return text.replace(HTML_COMMENT, "").replace(INVISIBLE, "").replace(/\r\n?/g, "\n");
}

/**
 * The tags a prompt uses as markers (src/runner/render/prompts.ts): outside text may mention them, never
 * open or close one, so nothing it says can step out of the context block or pose as the request.
 */
export const PROMPT_MARKERS = [
  "github-context",
  "request",
  "comment",
  "issue",
  "pull-request",
  "review-discussion",
  "review-comment",
  "review",
  "trigger-context",
  "context-item",
  "check-run",
  "job-log",
  "project-instructions",
] as const;

// `< / github-context` reads as a tag to a model as much as `</github-context` does.
const MARKER = new RegExp(`<(\\s*\\/?\\s*)(${PROMPT_MARKERS.join("|")})\\b`, "gi");

// Every line break a reader (or a model) could see, not only \n.
const LINE_BREAK = /(?:\r\n|[\n\r\v\f\u0085\u2028\u2029])+/g;

/**
 * A body of outside text (a comment, an issue body, CLAUDE.md) as it goes between a prompt's
 * markers: sanitized, and unable to open or close a marker ("</github-context>" becomes
 * "&lt;/github-context>"). Other angle brackets stay: code reads as code.
 */
export function promptText(text: string): string {
  return sanitizeForPrompt(text).replace(MARKER, "&lt;$1$2");
}

/**
 * One outside value (a branch or file name, a title, a login, a URL, a commit subject) as it
 * goes into a line of a prompt or a tag's attribute: sanitized, on one line, and with no `"`,
 * `<` or `>`, so it can neither end its attribute nor open or close a tag.
 */
export function promptValue(value: string): string {
  return sanitizeForPrompt(value)
    .replace(LINE_BREAK, " ")
    .replace(/["<>]/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
