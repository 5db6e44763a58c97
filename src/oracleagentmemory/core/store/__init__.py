"""The one SQL store behind ``OracleMemoryStore`` and its per-engine dialects (internal)."""
