/** The runner's WorkspacePort over src/workspace/workspace.ts. */
import fs from "node:fs/promises";
import type { WorkspacePort } from "../ports.js";
import type { Workspaces } from "../../workspace/workspace.js";
import { touchWorkspace } from "../../workspace/collect-idle.js";

export function workspacePort(ws: Workspaces): WorkspacePort {
  return {
    pathFor: (key) => ws.pathFor(key),
    // Only the key's directory itself is looked at: Tether made it; what is inside is the agent's.
    exists: async (dir) => ((await fs.readdir(dir).catch(() => [])) as string[]).length > 0,
    prepare: async (req) => {
      const w = await ws.prepare(req);
      await touchWorkspace(w.dir); // collection measures idleness by it
      return {
        dir: w.dir,
        origin: w.origin,
        defaultBranch: w.defaultBranch,
        upstream: w.upstream,
        headSha: w.headSha,
      };
    },
    agentControl: (req) => ws.agentControl(req),
    readFile: (req) => ws.readFile(req),
    projectInstructions: (req) => ws.projectInstructions(req),
    holdForPlan: (req) => ws.holdForPlan(req, req.signal),
    maintain: async (req) => {
      await ws.maintain(req, req.signal);
      await ws.mirrors.maintain(req, req.signal);
    },
  };
}
