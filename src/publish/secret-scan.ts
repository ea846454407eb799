/**
 * The secret scan of a change before it is pushed: every line the diff adds, and the commit
 * messages, against the redactor's shapes (GitHub tokens, Anthropic keys, private keys, AWS
 * keys…) and the values Tether knows are secret (its private key, webhook secret, database URL,
 * model API key, installation token). A hit blocks the push. Pure, so every rule is a table row
 * (test/unit/publish-checks.test.ts).
 */
import { SECRET_SHAPES, secretValues } from "../core/redact.js";

export interface SecretHit {
  /** The file the line is in; null for a commit message. */
  path: string | null;
  /** The line number in the new file (or the message); null when unknown. */
  line: number | null;
  /** What it looks like: "a GitHub token", "a private key", "a secret Tether holds". */
  kind: string;
}

/** What one line holds, if anything. */
export function secretIn(line: string, known: readonly string[]): string | null {
  for (const k of known) if (line.includes(k)) return "a secret Tether holds";
  for (const { kind, re } of SECRET_SHAPES) {
    re.lastIndex = 0;
    const hit = re.test(line);
    re.lastIndex = 0;
    if (hit) return kind;
  }
  return null;
}

/**
 * Hits among the lines a unified diff adds. `known` are the secret values themselves; they are
 * never part of what is returned.
 */
export function scanDiff(diff: string, secrets: Iterable<string | undefined>): SecretHit[] {
  const known = secretValues(secrets);
  const hits: SecretHit[] = [];
  let file: string | null = null;
  let line = 0;
  for (const raw of diff.split("\n")) {
    if (raw.startsWith("diff --git ")) {
      file = null;
      continue;
    }
    if (raw.startsWith("+++ ")) {
      const p = raw.slice(4);
      file = p === "/dev/null" ? null : unquote(p).replace(/^b\//, "");
      continue;
    }
    if (raw.startsWith("--- ")) continue;
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(raw);
    if (hunk) {
      line = Number(hunk[1]);
      continue;
    }
    if (raw.startsWith("+")) {
      const kind = secretIn(raw.slice(1), known);
      if (kind) hits.push({ path: file, line, kind });
      line++;
    } else if (raw.startsWith(" ")) line++;
  }
  return hits;
}

/** Hits in a commit message. */
export function scanMessage(message: string, secrets: Iterable<string | undefined>): SecretHit[] {
  const known = secretValues(secrets);
  const hits: SecretHit[] = [];
  message.split("\n").forEach((l, i) => {
    const kind = secretIn(l, known);
    if (kind) hits.push({ path: null, line: i + 1, kind });
  });
  return hits;
}

/** git quotes paths with unusual characters: "b/a\tb". */
function unquote(p: string): string {
  if (!p.startsWith('"') || !p.endsWith('"')) return p;
  return p
    .slice(1, -1)
    .replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)))
    .replace(/\\(.)/g, (_m, c: string) => ({ n: "\n", t: "\t" })[c] ?? c);
}
