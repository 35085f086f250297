"""Pure domain model: ids, entities, events, the registry and its rules (stdlib only, no IO, no clock)."""
