"""The ``workcoord`` command line (entry point :func:`workcoord.cli.main.main`)."""
