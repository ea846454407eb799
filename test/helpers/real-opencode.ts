import { resolveOpencodePath } from "../../src/opencode/opencode-cli.js";

/** The pinned opencode binary (TETHER_OPENCODE_PATH first); throws when it is not installed. */
export function resolveOpencodeBinary(): string {
  const bin = resolveOpencodePath({ TETHER_OPENCODE_PATH: process.env.TETHER_OPENCODE_PATH });
  if (bin === "opencode")
    throw new Error(
      "the opencode binary is not installed: run npm ci (opencode-linux-x64 is pinned)",
    );
  return bin;
}
