"""Helpers shared across the test suites, each defined once: real databases (``databases``), a
started coordinator and gRPC call helpers (``harness``), services as OS processes
(``processes``) and REST checks and bodies (``rest``)."""
