"""Helpers shared across the test suites, each defined once: real databases (``databases``), a
started coordinator and gRPC call helpers (``harness``), services as OS processes
(``processes``), REST checks and bodies (``rest``) and the invariant checker (``invariants``)."""
