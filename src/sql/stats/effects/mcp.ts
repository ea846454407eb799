/** Tool calls to the operator's MCP servers (#39; docs/operations.md "MCP servers"). */
import type { PoolClient } from "../../../db/pool.js";
import type { StatsWindow } from "../window.js";

/**
 * Tool calls by server, of tasks queued in the window: the sum of each server's count in
 * tasks.mcp_tool_calls. Only servers some turn was given appear (with 0 when none was called).
 */
export async function mcpToolCalls(c: PoolClient, w: StatsWindow): Promise<Record<string, number>> {
  const { rows } = await c.query<{ server: string; calls: number }>(
    `SELECT e.key AS server, COALESCE(sum((e.value)::numeric), 0)::int AS calls
       FROM tasks t, jsonb_each(t.mcp_tool_calls) e
      WHERE t.created_at >= $1 AND t.created_at <= $2
        AND jsonb_typeof(t.mcp_tool_calls) = 'object' AND jsonb_typeof(e.value) = 'number'
      GROUP BY e.key ORDER BY e.key`,
    [w.from, w.to],
  );
  return Object.fromEntries(rows.map((r) => [r.server, r.calls]));
}
