/**
 * Text from GitHub goes into a prompt only after this: hidden HTML comments (invisible on
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
