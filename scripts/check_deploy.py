"""Checks of the Kubernetes manifests and the Helm chart, up to starting each service as its pod
would: ``uv run python scripts/check_deploy.py [--start] [--only NAME]…``. The checks live in
the package ``scripts/deploy_check`` (its docstring says what each part checks)."""

from __future__ import annotations

import importlib
import sys

if __name__ == "__main__":
    # Run as a script, this file's folder is on sys.path: the package is importable by name.
    sys.exit(importlib.import_module("deploy_check.cli").main())
