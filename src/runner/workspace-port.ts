/** The runner's WorkspacePort over src/runner/workspace.ts. */
import fs from "node:fs/promises";
import type { Logger } from "../log.js";
import type { WorkspacePort } from "./ports.js";
import { maintainWorkspace, prepareWorkspace, workspacePath } from "./workspace.js";

/**
 * The root is resolved to its real path once, so the directory the resume decision compares
 * (pathFor) is the same string the checkout reports and the CLI keys its session files by.
 */
export async function createWorkspacePort(rootDir: string, log: Logger): Promise<WorkspacePort> {
  await fs.mkdir(rootDir, { recursive: true });
  const root = await fs.realpath(rootDir);
  return {
    pathFor: (repo, issueNumber, agent) => workspacePath(root, { repo, issueNumber, agent }),
    exists: async (dir) => (await fs.stat(dir).catch(() => null))?.isDirectory() ?? false,
    prepare: async (req) => {
      const ws = await prepareWorkspace({ root, log, ...req });
      return { dir: ws.dir };
    },
    maintain: async (req) => {
      await maintainWorkspace({ root, log, ...req, timeoutMs: 120_000 });
    },
  };
}
