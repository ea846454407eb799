/**
 * Last line of defence before text leaves the process (comments, logs, error lines, git's
 * output): known secrets by value, and anything shaped like a credential. One list, used by
 * `redact` here, by git's `redactToken` (src/github/git-auth.ts), by the error describer
 * (src/github/errors.ts) and by publishing's secret scan.
 */

/**
 * A GitHub token, whole: the classic ones (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and 36 or
 * more characters; `github_pat_…`), and stateless installation tokens, `ghs_<app id>_<JWT>`
 * (GitHub's pattern `ghs_[A-Za-z0-9._]{36,}`, ~520 characters): their JWT's dots would end a
 * match that stops at the first one, leaving the payload and signature in the clear, so every
 * `.segment` that follows is part of the token.
 */
const GITHUB_TOKEN = /\b(?:gh[pousr]_|github_pat_)[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*/g;

/** What a secret looks like, and what to call it when one is found (publishing's secret scan). */
export const SECRET_SHAPES: ReadonlyArray<{ kind: string; re: RegExp }> = [
  { kind: "a GitHub token", re: GITHUB_TOKEN },
  // Before OpenAI's shape, which would take it too: the scan names the first that matches.
  { kind: "an Anthropic API key", re: /\bsk-ant-[A-Za-z0-9_-]{10,}/g },
  // `sk-` + 48 (legacy), `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`: high-entropy, so at
  // least one digit, which keeps a hyphenated word like `sk-some-long-slug` out.
  {
    kind: "an OpenAI API key",
    re: /\bsk-(?:(?:proj|svcacct|admin)-)?(?=[A-Za-z0-9_-]{0,300}\d)[A-Za-z0-9_-]{20,}/g,
  },
  {
    kind: "a private key",
    re: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  },
  { kind: "a GitHub token", re: /\bv1\.[0-9a-f]{40}\b/g }, // legacy installation tokens
  { kind: "git credentials", re: /(x-access-token:)[^@\s]+/g },
  { kind: "an AWS access key", re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
];

/**
 * Blanked in text, not a reason to refuse a push: a JSON Web Token (the app's own JWT mints
 * installation tokens for ten minutes), and an Authorization header's value. Repositories
 * commit example JWTs, so the secret scan leaves them to review.
 */
const REDACTED_TOO: ReadonlyArray<RegExp> = [
  /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g,
  /(authorization:\s*(?:basic|bearer|token)\s+)[^\s"',;]+/gi,
];

/**
 * Text with every credential of a known shape blanked (no known values: see `redact`). A
 * replacement keeps a matched prefix that ends in ":" or a space (`x-access-token:`, an
 * `Authorization: Bearer `), so the text still says what was there.
 */
export function redactShapes(text: string): string {
  let out = text;
  for (const re of [...SECRET_SHAPES.map((s) => s.re), ...REDACTED_TOO]) {
    out = out.replace(re, (_m, prefix?: unknown) =>
      typeof prefix === "string" && /[:\s]$/.test(prefix) ? `${prefix}[redacted]` : "[redacted]",
    );
  }
  return out;
}

export function redact(text: string, secrets: Iterable<string | undefined> = []): string {
  let out = text;
  for (const s of secretValues(secrets)) out = out.split(s).join("[redacted]");
  return redactShapes(out);
}

/**
 * The values to look for: each secret, and each line of a multi-line one (a private key), so
 * that a key printed piecewise, re-wrapped, or JSON-escaped (its newlines as `\n`) is still
 * blanked. Short lines (a PEM's last one can be a few characters) are left to the whole value.
 */
export function secretValues(secrets: Iterable<string | undefined>): string[] {
  const out = new Set<string>();
  for (const s of secrets) {
    if (!s || s.length < 8) continue;
    out.add(s);
    if (!s.includes("\n")) continue;
    for (const line of s.split(/\r?\n/)) {
      const t = line.trim();
      if (t.length >= 16 && !/^-----(BEGIN|END) /.test(t)) out.add(t);
    }
  }
  // Longest first, so a whole secret is replaced before one of its lines splits it up.
  return [...out].sort((a, b) => b.length - a.length);
}

/**
 * A session id as it may appear in a thread: its first eight characters. The whole id is what
 * the session store and the CLI know a session by; the thread is read by anyone who can read
 * the issue, so it never gets more than enough to tell sessions apart.
 */
export function shortSessionId(id: string): string {
  return id.slice(0, 8);
}

/** Text for a thread with every UUID-shaped id (Claude's sessions, Codex's threads) shortened. */
export function shortenSessionIds(text: string): string {
  return text.replace(
    /\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi,
    (_m, head: string) => `${head}…`,
  );
}
