"""The alert rules of every rendered PrometheusRule: ``promtool check rules`` accepts them
(syntax, PromQL, templates), and every alert's ``runbook_url`` names a heading of
``deploy/RUNBOOK.md`` (``deploy/RUNBOOK.md#<anchor>``, GitHub's anchor of the heading)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml  # type: ignore[import-untyped]

from .common import ROOT, CheckFailed, Doc

RUNBOOK = ROOT / "deploy" / "RUNBOOK.md"
RUNBOOK_PREFIX = "deploy/RUNBOOK.md#"


def runbook_anchors(text: str) -> frozenset[str]:
    """GitHub's anchors of the Markdown headings in ``text`` (outside code fences)."""
    anchors = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        heading = re.match(r"#{1,6} (.+)", line)
        if heading and not fenced:
            words = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            anchors.add(words.replace(" ", "-"))
    return frozenset(anchors)


def _rule_specs(docs: list[Doc]) -> list[Doc]:
    return [d["spec"] for d in docs if d.get("kind") == "PrometheusRule"]


def check_runbook_urls(docs: list[Doc], source: str) -> list[str]:
    """Alerts without a ``runbook_url`` into the runbook, or naming a heading it lacks."""
    anchors = runbook_anchors(RUNBOOK.read_text())
    problems = []
    for spec in _rule_specs(docs):
        for group in spec["groups"]:
            for rule in group["rules"]:
                if "alert" not in rule:
                    continue
                url = str((rule.get("annotations") or {}).get("runbook_url", ""))
                if not url.startswith(RUNBOOK_PREFIX):
                    problems.append(
                        f"{source}: alert {rule['alert']}: runbook_url must start with "
                        f"{RUNBOOK_PREFIX}"
                    )
                elif url.removeprefix(RUNBOOK_PREFIX) not in anchors:
                    problems.append(
                        f"{source}: alert {rule['alert']}: deploy/RUNBOOK.md has no heading "
                        f"for {url}"
                    )
    return problems


def promtool() -> str:
    """The ``promtool`` on PATH (Debian: ``apt-get install -y prometheus``)."""
    found = shutil.which("promtool")
    if found is None:
        raise CheckFailed("promtool is not installed (apt-get install -y prometheus)")
    return found


def check_promtool(docs: list[Doc], source: str) -> list[str]:
    """``promtool check rules`` over each PrometheusRule's spec (a rule file's shape)."""
    problems = []
    for index, spec in enumerate(_rule_specs(docs)):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"rules-{index}.yaml"
            path.write_text(yaml.safe_dump(spec, sort_keys=False))
            done = subprocess.run(  # noqa: S603 (promtool on a file we wrote)
                [promtool(), "check", "rules", str(path)],
                capture_output=True,
                text=True,
                check=False,
            )
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip().replace("\n", " | ")
            problems.append(f"{source}: promtool check rules: {output}")
    return problems
