"""The chaos soak: real services on a private PostgreSQL and Redis, a mixed worker load, process
kills and restarts of every kind, then the invariant checker and an accounting of every
acknowledged write. Run it as ``uv run python -m bench.chaos --seconds N``."""
