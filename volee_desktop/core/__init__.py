"""Pure domain model: ids, entities, events, registry and rules (stdlib only, no IO)."""
