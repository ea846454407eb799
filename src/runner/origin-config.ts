/**
 * Whether a checkout's git config lets a fetch that carries the installation token go anywhere
 * but the clone URL, decided from one `git config --show-scope --get-regexp` listing instead of
 * a process per question.
 *
 * The checkout's own config (local and worktree scopes) is writable by the agent: keys there
 * that redirect or proxy git's HTTP traffic, rewrite URLs, pull in other config files, or run a
 * program while the token is in the environment refuse the fetch outright. A url.*.insteadOf
 * from any scope (the runner's global or system config too) could still rewrite origin, so the
 * effective URL must equal the clone URL. Git rewrites a URL only when some insteadOf value is
 * a prefix of it; when none is (compared without case, so never fewer than git would match) the
 * effective URL is the configured one. When one is, git's own answer (`ls-remote --get-url`)
 * decides, rather than a copy of its longest-prefix rule.
 */

/** Keys that, set in the checkout's own config, make the fetch unsafe (git's lower-cased key form). */
export const UNSAFE_CONFIG =
  "^(http|url|credential|include|includeif)\\.|^core\\.(askpass|gitproxy|sshcommand)$|^remote\\.origin\\.(proxy|vcs|uploadpack)$";

/** What to ask `git config --get-regexp` for: the unsafe keys, plus origin's URL. */
export const ORIGIN_CONFIG_PATTERN = `${UNSAFE_CONFIG}|^remote\\.origin\\.url$`;

const UNSAFE = new RegExp(UNSAFE_CONFIG, "u");

/** One entry of `git config -z --show-scope --get-regexp`. */
export interface ConfigEntry {
  /** system, global, local, worktree, command. */
  scope: string;
  /** Section and key lower-cased, subsection as written: "url.https://x/.insteadof". */
  key: string;
  /** null for a key written without "=" (a bare boolean). */
  value: string | null;
}

/** `scope NUL key LF value NUL …`; a key without a value has no LF. */
export function parseConfigListing(stdout: string): ConfigEntry[] {
  const fields = stdout.split("\0");
  const entries: ConfigEntry[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const scope = fields[i] as string;
    const item = fields[i + 1] as string;
    const lf = item.indexOf("\n");
    entries.push(
      lf < 0
        ? { scope, key: item, value: null }
        : { scope, key: item.slice(0, lf), value: item.slice(lf + 1) },
    );
  }
  return entries;
}

export interface OriginCheck {
  /** Unsafe keys in the checkout's own config; any of them refuses the fetch. */
  unsafeKeys: string[];
  /** origin's configured URL is not exactly the clone URL (or is set more than once, or elsewhere). */
  repoint: boolean;
  /**
   * git must say what the effective URL is: origin is being re-pointed, or an insteadOf value
   * could rewrite the clone URL.
   */
  askGit: boolean;
}

export function checkOriginConfig(entries: ConfigEntry[], cloneUrl: string): OriginCheck {
  const own = (e: ConfigEntry) => e.scope === "local" || e.scope === "worktree";
  const unsafeKeys = [
    ...new Set(entries.filter((e) => own(e) && UNSAFE.test(e.key)).map((e) => e.key)),
  ];
  const urls = entries.filter((e) => e.key === "remote.origin.url");
  const repoint = !(
    urls.length === 1 &&
    own(urls[0] as ConfigEntry) &&
    urls[0]?.value === cloneUrl
  );
  const target = cloneUrl.toLowerCase();
  const rewritable = entries.some(
    (e) =>
      e.key.startsWith("url.") &&
      e.key.endsWith(".insteadof") &&
      target.startsWith((e.value ?? "").toLowerCase()),
  );
  return { unsafeKeys, repoint, askGit: repoint || rewritable };
}

/**
 * Words for the thread when the fetch must not go ahead; undefined when it may. `effectiveUrl`
 * is git's answer when `askGit`, else the clone URL itself.
 */
export function refusal(
  check: OriginCheck,
  effectiveUrl: string,
  cloneUrl: string,
): string | undefined {
  if (check.unsafeKeys.length > 0) {
    return `the checkout's git config sets ${check.unsafeKeys.join(", ")}; remove it so Tether can fetch`;
  }
  if (effectiveUrl !== cloneUrl) {
    return "the checkout's git config rewrites the clone URL; remove the url.* setting so Tether can fetch";
  }
  return undefined;
}
