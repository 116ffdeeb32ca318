"""docs/architecture.md's index of the SQL store (port method → the named statements it runs)
is the code's: read from the source of the store's parts, it must match the table in the doc
row for row, and every statement it names must exist in ``storage/sql/statements``."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

from sqlalchemy.sql.base import Executable

from workcoord.coordinator.domain.ports import Reader, Tx
from workcoord.coordinator.storage.sql import SqlTx
from workcoord.coordinator.storage.sql.statements import ByDialect

ROOT = Path(__file__).resolve().parents[3]
SQL = ROOT / "services/coordinator/src/workcoord/coordinator/storage/sql"
DOC = ROOT / "docs/architecture.md"
BEGIN = "<!-- sql-index:begin -->"
END = "<!-- sql-index:end -->"
# What the shared helpers of _base.py run, in the index's words.
HELPERS = {
    "_insert": {"bulk:insert_rows", "bulk:unnest_insert"},
    "_update_each": {"bulk:update_by_key", "bulk:unnest_update"},
    "_write_together": {
        "bulk:unnest_update",
        "bulk:unnest_insert",
        "bulk:unnest_resolve_escalations",
        "bulk:unnest_add",
        "bulk:set_revision",
    },
    "_release_holds": {"attempts:RELEASE_HOLDS"},
    "write_held_back_usage": {"usage:ADD_USAGE"},
}
HELD_BACK = "write_held_back"
# Methods of the store that are not port methods but belong in the index: the lock every
# write takes first (SqlStore.write), the row a group of worker writes takes later, and the
# flush before commit.
STORE_METHODS = ("lock_coordinator", "lock_row", "flush")
# The updates a method holds back (written later by write_held_back or flush).
HOLDS_BACK = {
    "update_items": "items",
    "update_attempts": "attempts",
    "mark_lanes_served": "lane turns",
    "resolve_escalations": "resolutions",
}
# Held back until the flush only (PostgreSQL), or written before a read of their own kind.
HOLDS_BACK_TO_FLUSH = {"add_usage": "roll-ups"}
# Port methods that, in a write transaction, are other port methods (``ports`` functions).
IN_A_TRANSACTION = {
    "coordinators_and_attempts": ("get_coordinator", "attempts_with_items"),
    "extend_attempts": ("update_attempts", "add_usage"),
}


def _methods() -> dict[str, tuple[set[str], set[str]]]:
    """Method name -> (module:statement names it refers to, self-methods it calls), over the
    store's part modules."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    for path in sorted(SQL.glob("*.py")):
        tree = ast.parse(path.read_text())
        aliases: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "statements" and node.level:
                for name in node.names:
                    aliases[name.asname or name.name] = name.name
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for fn in cls.body:
                if not isinstance(fn, ast.AsyncFunctionDef | ast.FunctionDef):
                    continue
                statements: set[str] = set()
                calls: set[str] = set()
                for part in ast.walk(fn):
                    if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name):
                        if part.value.id in aliases:
                            statements.add(f"{aliases[part.value.id]}:{part.attr}")
                        elif part.value.id == "self":
                            calls.add(part.attr)
                found[fn.name] = (statements, calls)
    return found


def index() -> dict[str, tuple[list[str], bool]]:
    """Port method (of SqlTx) -> (the statements it runs, sorted; whether it writes the
    held-back updates first)."""
    methods = _methods()

    def reach(name: str, seen: set[str]) -> tuple[set[str], bool]:
        if name in seen:
            return set(), False
        seen.add(name)
        if name in HELPERS:
            return set(HELPERS[name]), False
        statements, calls = methods.get(name, (set(), set()))
        out = set(statements)
        held_back = HELD_BACK in calls
        for call in calls - {HELD_BACK}:
            if call in HELPERS or (call in methods and call.startswith("_")):
                more, _ = reach(call, seen)
                out |= more
            elif call in methods and call != name and _is_port(call):
                more, _ = reach(call, seen)  # a port method built on another (upsert_worker)
                out |= more
        return out, held_back

    rows: dict[str, tuple[list[str], bool]] = {}
    for name in [*STORE_METHODS, *sorted(_port_methods())]:
        statements, held_back = reach(name, set())
        rows[name] = (sorted(s for s in statements if _is_statement(s)), held_back)
    return rows


def _is_statement(ref: str) -> bool:
    """Whether ``module:NAME`` is a statement (or builds one), not a constant it uses."""
    module, name = ref.split(":")
    found = getattr(
        importlib.import_module(f"workcoord.coordinator.storage.sql.statements.{module}"), name
    )
    return isinstance(found, Executable | ByDialect) or inspect.isfunction(found)


def _is_port(name: str) -> bool:
    return name in _port_methods()


def _port_methods() -> set[str]:
    names: set[str] = set()
    for protocol in (Reader, Tx):
        for cls in protocol.__mro__:
            if getattr(cls, "_is_protocol", False) and cls.__module__ != "typing":
                names |= {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}
    return names


def table() -> str:
    """The index as the doc's Markdown table."""
    lines = [
        "| port method | statements (`module:NAME` in `storage/sql/statements/`) | held back "
        "written first |",
        "|---|---|---|",
    ]
    for name, (statements, held_back) in index().items():
        shown = ", ".join(f"`{s}`" for s in statements)
        if name in HOLDS_BACK:
            held = (
                f"held back: the {HOLDS_BACK[name]} are written by the next "
                "`write_held_back` or `flush`"
            )
            shown = f"{shown}; {held}" if shown else held
        if name in HOLDS_BACK_TO_FLUSH:
            held = (
                f"on PostgreSQL held back: the {HOLDS_BACK_TO_FLUSH[name]} are written by the "
                "`flush`, or before a read of them"
            )
            shown = f"{shown}; {held}" if shown else held
        if name in IN_A_TRANSACTION:
            others = " and ".join(f"`{other}`" for other in IN_A_TRANSACTION[name])
            held = f"in a write transaction: {others}"
            shown = f"{shown} in place (PostgreSQL); {held}" if shown else held
        label = f"`{name}` (store)" if name in STORE_METHODS else f"`{name}`"
        lines.append(f"| {label} | {shown} | {'yes' if held_back else ''} |")
    return "\n".join(lines)


def test_every_port_method_is_implemented_by_the_sql_store() -> None:
    missing = sorted(n for n in _port_methods() if not hasattr(SqlTx, n))
    assert missing == []
    assert "claim_candidates" in index()  # the probe sees the port


def test_the_claim_is_found_in_one_hop() -> None:
    statements, held_back = index()["claim_candidates"]
    assert statements == ["items:claim_candidates"]
    assert held_back


def test_every_indexed_statement_exists() -> None:
    for statements, _ in index().values():
        for ref in statements:
            assert _is_statement(ref), ref


def test_the_doc_holds_the_index_of_the_code() -> None:
    text = DOC.read_text()
    match = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    assert match is not None, f"docs/architecture.md has no {BEGIN} … {END} block"
    expected = table()
    assert match.group(1).strip() == expected, "regenerate the index:\n" + expected


def test_every_named_statement_says_what_it_does() -> None:
    """A statement object has a ``#:`` comment right above it; a public function that builds
    one has a docstring."""
    undescribed: list[str] = []
    checked = 0
    for path in sorted((SQL / "statements").glob("*.py")):
        module = importlib.import_module(
            f"workcoord.coordinator.storage.sql.statements.{path.stem}"
        )
        lines = path.read_text().splitlines()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                value = getattr(module, name, None)
                if name.startswith("_") or not isinstance(value, Executable | ByDialect):
                    continue
                checked += 1
                if not lines[node.lineno - 2].lstrip().startswith("#:"):
                    undescribed.append(f"{path.stem}:{name}")
            elif (
                isinstance(node, ast.FunctionDef)
                and not node.name.startswith("_")
                and not ast.get_docstring(node)
            ):
                undescribed.append(f"{path.stem}:{node.name}")
    assert checked > 50  # the probe sees the statements
    assert undescribed == []
