import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  lookupClaudePath,
  platformPackage,
  resolveClaudePath,
  type ClaudePathDeps,
} from "../../src/claude/claude-path.js";

const deps = (over: Partial<ClaudePathDeps> = {}): ClaudePathDeps => ({
  platform: "linux",
  arch: "x64",
  musl: false,
  resolvePackageJson: (pkg) => `/app/node_modules/${pkg}`,
  isExecutable: () => true,
  pathEnv: "/usr/local/bin:/usr/bin",
  ...over,
});

describe("lookupClaudePath", () => {
  it("TETHER_CLAUDE_PATH wins", () => {
    expect(lookupClaudePath({ TETHER_CLAUDE_PATH: "/opt/claude" }, deps())).toEqual({
      path: "/opt/claude",
      source: "env",
    });
  });

  it("then the bundled platform binary beside its package.json", () => {
    expect(lookupClaudePath({}, deps())).toEqual({
      path: "/app/node_modules/@anthropic-ai/claude-code-linux-x64/claude",
      source: "bundled",
    });
  });

  it("then claude on PATH, first directory that has it", () => {
    const found = lookupClaudePath(
      {},
      deps({
        resolvePackageJson: () => {
          throw new Error("Cannot find module");
        },
        isExecutable: (f) => f === "/usr/bin/claude",
      }),
    );
    expect(found).toEqual({ path: "/usr/bin/claude", source: "path" });
  });

  it("a bundled package without an executable binary falls through to PATH", () => {
    const found = lookupClaudePath(
      {},
      deps({ isExecutable: (f) => f.startsWith("/usr/local/bin") }),
    );
    expect(found).toEqual({ path: "/usr/local/bin/claude", source: "path" });
  });

  it("nothing found: plain `claude`, marked unresolved", () => {
    const found = lookupClaudePath({}, deps({ isExecutable: () => false }));
    expect(found).toEqual({ path: "claude", source: "unresolved" });
  });

  it("an empty TETHER_CLAUDE_PATH counts as unset", () => {
    expect(lookupClaudePath({ TETHER_CLAUDE_PATH: "" }, deps()).source).toBe("bundled");
  });

  it("finds the pinned dev dependency on this machine", () => {
    const found = resolveClaudePath({});
    if (process.platform === "linux" && process.arch === "x64") {
      const bundled = path.resolve(
        import.meta.dirname,
        "../../node_modules/@anthropic-ai/claude-code-linux-x64/claude",
      );
      expect(fs.realpathSync(found)).toBe(fs.realpathSync(bundled));
    } else {
      expect(found).toBeTruthy();
    }
  });
});

describe("platformPackage", () => {
  it.each([
    ["linux", "x64", false, "@anthropic-ai/claude-code-linux-x64"],
    ["linux", "x64", true, "@anthropic-ai/claude-code-linux-x64-musl"],
    ["linux", "arm64", false, "@anthropic-ai/claude-code-linux-arm64"],
    ["darwin", "arm64", false, "@anthropic-ai/claude-code-darwin-arm64"],
    ["darwin", "arm64", true, "@anthropic-ai/claude-code-darwin-arm64"],
    ["win32", "x64", false, "@anthropic-ai/claude-code-win32-x64"],
    ["linux", "ia32", false, undefined],
    ["aix", "ppc64", false, undefined],
  ] as const)("%s %s musl=%s → %s", (platform, arch, musl, pkg) => {
    expect(platformPackage({ platform, arch, musl })).toBe(pkg);
  });

  it("windows binaries end in .exe", () => {
    const found = lookupClaudePath({}, deps({ platform: "win32" }));
    expect(found.path).toMatch(/claude-code-win32-x64[/\\]claude\.exe$/);
  });
});
