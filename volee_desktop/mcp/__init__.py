"""The MCP server an agent talks to."""
