"""The serving room owns who may ask what and how they are answered: the API's methods, the
access rules and the caller's identity, subscriptions and queries, the MCP hub and its HTTP
endpoint (with admission), the desktop peer and the settings that lower safety.  It imports the
kernel and the agents room."""
