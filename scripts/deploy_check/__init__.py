"""Checks of the Kubernetes manifests — the Kustomize base and overlays in ``deploy/k8s`` and
the Helm chart ``deploy/helm/workcoord`` — up to starting each service as its pod would. No
cluster is needed. Run it as ``uv run python scripts/check_deploy.py [--start] [--only NAME]…``.

1. **Render** (render.py) the base and every overlay with ``kubectl kustomize``, and the chart
   with ``helm lint --strict`` and ``helm template`` for its default values and
   ``values-production.yaml`` (``scripts/install-kubectl`` and ``scripts/install-helm`` provide
   the tools when none is installed).
2. **Validate** (schemas.py) every object against the Kubernetes OpenAPI schemas, offline and
   strict, and the Prometheus Operator objects and metric names.
   **Alert rules** (rules.py): ``promtool check rules`` accepts every PrometheusRule, and each
   alert's ``runbook_url`` names a heading of ``deploy/RUNBOOK.md``.
3. **Settings, ports, Ingress** (config.py), against the services' own settings.
4. **Parity** (parity.py): each rendering of the chart has the objects and variables of its
   overlay (default values: the base; production values: the production overlay).
5. ``--start`` (start.py, local.py): for each overlay and each rendering of the chart, run what
   its pods run and probe them as kubelet would.
"""
