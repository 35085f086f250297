"""The local API: versioned NDJSON over a Unix socket only its own user can reach."""
