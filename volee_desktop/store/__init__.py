"""The durable event log: SQLite in WAL mode, group commit, snapshots, upcasters."""
