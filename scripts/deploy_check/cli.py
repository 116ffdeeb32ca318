"""The command line of the deploy check (see the package's docstring)."""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor

from . import __doc__ as description
from .common import CheckFailed, Doc
from .config import check_ingress, check_ports, check_settings
from .parity import check_parity
from .render import PARITY, Source, sources
from .rules import check_promtool, check_runbook_urls
from .schemas import check_metric_names, check_schemas
from .start import start_source


def check_source(source: Source, docs: list[Doc]) -> list[str]:
    """Every static check of one rendered source."""
    label = source.label
    return [
        *check_schemas(docs, label),
        *check_settings(docs, label),
        *check_ports(docs, label),
        *check_ingress(docs, label),
        *check_metric_names(docs, label),
        *check_runbook_urls(docs, label),
        *check_promtool(docs, label),
    ]


def start_all(rendered: list[tuple[str, list[Doc]]], jobs: int) -> list[str]:
    """``start_source`` for each rendered source, ``jobs`` at a time: each has its own database,
    ports and folder, and most of a start is spent waiting for processes to come up."""

    def start_one(name: str, docs: list[Doc]) -> list[str]:
        try:
            return start_source(name, docs)
        except CheckFailed as exc:
            return [f"{name}: {exc}"]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(start_one, name, docs) for name, docs in rendered]
        return [problem for future in futures for problem in future.result()]


def main(argv: list[str] | None = None) -> int:
    """Run the checks; 0 when nothing is wrong, else 1 with one line per problem on stderr."""
    parser = argparse.ArgumentParser(description=(description or "").split("\n\n")[0])
    parser.add_argument("--start", action="store_true", help="also start each source's pods")
    parser.add_argument(
        "--only",
        "--overlay",
        action="append",
        default=[],
        metavar="NAME",
        help="only these sources (staging, production, helm, helm-production); base always",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="with --start, how many sources start at once (2)"
    )
    args = parser.parse_args(argv)
    problems: list[str] = []
    rendered: dict[str, list[Doc]] = {}
    try:
        chosen = sources(args.only)
        for source in chosen:
            source.lint()
            docs = rendered[source.name] = source.render()
            problems += check_source(source, docs)
            print(
                f"check_deploy: {source.label}: {len(docs)} objects rendered and checked",
                flush=True,
            )
        labels = {s.name: s.label for s in chosen}
        for chart, overlay in PARITY.items():
            if chart in rendered and overlay in rendered:
                problems += check_parity(
                    rendered[chart], rendered[overlay], labels[chart], labels[overlay]
                )
        if args.start and not problems:
            startable = [(s.name, rendered[s.name]) for s in chosen if s.startable]
            problems += start_all(startable, args.jobs)
    except CheckFailed as exc:
        problems.append(str(exc))
    for problem in problems:
        print(f"check_deploy: {problem}", file=sys.stderr)
    return 1 if problems else 0
