/** `changes.protectedPaths` (issue 38): how a pattern matches a path, as a table. */
import { describe, expect, it } from "vitest";
import { globToRegExp, protectedAmong } from "../../src/publish/protected-paths.js";

const ROWS: Array<[glob: string, path: string, matches: boolean]> = [
  [".github/**", ".github/workflows/ci.yml", true],
  [".github/**", ".github/tether.yml", true],
  [".github/**", ".GitHub/Workflows/ci.yml", true],
  [".github/**", ".github", false],
  [".github/**", "docs/.github/x", false],
  [".github/**", ".githubx/a", false],
  [".github/", ".github/actions/setup/action.yml", true],
  ["package.json", "package.json", true],
  ["package.json", "web/package.json", false],
  ["package.json", "package.jsonx", false],
  ["**/package.json", "package.json", true],
  ["**/package.json", "web/app/package.json", true],
  ["scripts/**", "scripts/ci/run.sh", true],
  ["scripts/**", "scriptsx/run.sh", false],
  ["scripts/*", "scripts/run.sh", true],
  ["scripts/*", "scripts/ci/run.sh", false],
  ["*.mk", "build.mk", true],
  ["*.mk", "make/build.mk", false],
  ["Makefile?", "Makefile2", true],
  ["Makefile?", "Makefile", false],
  ["a/**/b", "a/b", true],
  ["a/**/b", "a/x/y/b", true],
  ["a.b+(c)[d]", "a.b+(c)[d]", true],
  ["a.b", "axb", false],
];

describe("protected path patterns", () => {
  it.each(ROWS)("%s against %s: %s", (glob, path, matches) => {
    expect(globToRegExp(glob).test(path)).toBe(matches);
  });

  it("publish.workflows: true (deprecated) lets workflows through, not the rest of .github/", () => {
    const paths = [".github/workflows/ci.yml", ".github/CODEOWNERS", "src/a.ts"];
    expect(protectedAmong(paths, [".github/**"], false)).toEqual(paths.slice(0, 2));
    expect(protectedAmong(paths, [".github/**"], true)).toEqual([".github/CODEOWNERS"]);
    expect(protectedAmong(paths, [], false)).toEqual([]);
  });
});
