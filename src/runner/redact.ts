/**
 * Last line of defence before text leaves the process (comments, logs): known secrets by value,
 * and anything shaped like a GitHub token, an Anthropic key or a PEM private key.
 */
const SHAPES: RegExp[] = [
  /\bgh[pousr]_[A-Za-z0-9]{20,255}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,255}\b/g,
  /\bsk-ant-[A-Za-z0-9_-]{10,}\b/g,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  /\bv1\.[0-9a-f]{40}\b/g, // legacy installation tokens
  /(x-access-token:)[^@\s]+/g,
];

export function redact(text: string, secrets: Iterable<string | undefined> = []): string {
  let out = text;
  for (const s of expand(secrets)) out = out.split(s).join("[redacted]");
  for (const re of SHAPES) {
    out = out.replace(re, (_m, prefix?: string) =>
      typeof prefix === "string" && prefix.endsWith(":") ? `${prefix}[redacted]` : "[redacted]",
    );
  }
  return out;
}

/**
 * The values to look for: each secret, and each line of a multi-line one (a private key), so
 * that a key printed piecewise, re-wrapped, or JSON-escaped (its newlines as `\n`) is still
 * blanked. Short lines (a PEM's last one can be a few characters) are left to the whole value.
 */
function expand(secrets: Iterable<string | undefined>): string[] {
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
