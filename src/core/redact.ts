/**
 * Last line of defence before text leaves the process (comments, logs): known secrets by value,
 * and anything shaped like a GitHub token, an Anthropic key or a PEM private key.
 */
/** What a secret looks like, and what to call it when one is found (publishing's secret scan). */
export const SECRET_SHAPES: ReadonlyArray<{ kind: string; re: RegExp }> = [
  { kind: "a GitHub token", re: /\bgh[pousr]_[A-Za-z0-9]{20,255}\b/g },
  { kind: "a GitHub token", re: /\bgithub_pat_[A-Za-z0-9_]{20,255}\b/g },
  { kind: "an Anthropic API key", re: /\bsk-ant-[A-Za-z0-9_-]{10,}\b/g },
  {
    kind: "a private key",
    re: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  },
  { kind: "a GitHub token", re: /\bv1\.[0-9a-f]{40}\b/g }, // legacy installation tokens
  { kind: "git credentials", re: /(x-access-token:)[^@\s]+/g },
  { kind: "an AWS access key", re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
];

export function redact(text: string, secrets: Iterable<string | undefined> = []): string {
  let out = text;
  for (const s of secretValues(secrets)) out = out.split(s).join("[redacted]");
  for (const { re } of SECRET_SHAPES) {
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
