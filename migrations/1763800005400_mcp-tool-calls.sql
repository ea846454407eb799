-- Up Migration

-- The operator's MCP servers (#39): a turn's tool calls to each server its agent was given, by
-- server name (`{"sentry": 3, "docs": 0}`); NULL for a turn whose agent was given none. Summed
-- by /api/stats (mcpToolCalls) and counted by /metrics (tether_mcp_tool_calls_total).
ALTER TABLE tasks ADD COLUMN mcp_tool_calls jsonb;

-- Down Migration

ALTER TABLE tasks DROP COLUMN mcp_tool_calls;
