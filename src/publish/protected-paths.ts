/**
 * `changes.protectedPaths` (issue 38): paths the agent may not change, because what they hold
 * runs with the repository's CI secrets or steers Tether (`.github/**` by default: workflows,
 * actions, `tether.yml`, CODEOWNERS). A repository adds what its CI runs (`package.json`,
 * `Makefile`, `scripts/**`). Pure: table rows in test/unit/protected-paths.test.ts.
 *
 * A pattern is matched against a file's whole path from the repository's root, without case
 * (a checkout on a case-blind file system reads `.GitHub/Workflows/x.yml` as the workflow):
 * `*` is any run of characters but `/`, `?` one such character, `**` any run of characters
 * (`**` as a whole segment: any number of directories, none included), and a pattern ending in
 * `/` is everything under that directory. `package.json` is the root one only;
 * `**\/package.json` is every one.
 */

/** The default: everything under `.github/`. */
export const DEFAULT_PROTECTED_PATHS: readonly string[] = [".github/**"];

/** Where workflows live: still publishable under the deprecated `publish.workflows: true`. */
export const WORKFLOWS_DIR = ".github/workflows/";

/** Pure: the glob as a regular expression over a whole path. */
export function globToRegExp(glob: string): RegExp {
  const pattern = glob.endsWith("/") ? `${glob}**` : glob;
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*" && pattern[i + 1] === "*") {
      const wholeSegment =
        (i === 0 || pattern[i - 1] === "/") && (i + 2 === pattern.length || pattern[i + 2] === "/");
      if (wholeSegment && pattern[i + 2] === "/") {
        re += "(?:.*/)?"; // `**/`: any directories, or none
        i += 2;
      } else {
        re += ".*";
        i += 1;
      }
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`, "i");
}

/**
 * Pure: the paths among `paths` that a protected pattern matches, less those under
 * `.github/workflows/` when `workflowsAllowed` (the deprecated `publish.workflows: true`).
 */
export function protectedAmong(
  paths: readonly string[],
  patterns: readonly string[],
  workflowsAllowed: boolean,
): string[] {
  const res = patterns.map(globToRegExp);
  return paths.filter(
    (p) =>
      res.some((r) => r.test(p)) &&
      !(workflowsAllowed && p.toLowerCase().startsWith(WORKFLOWS_DIR)),
  );
}
