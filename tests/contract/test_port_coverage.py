"""The suite cannot silently fall behind the port: every method (and attribute) of ``Reader``,
``Tx`` and ``Store`` has a contract case, and every case names real port methods."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import tests.contract
from workcoord.coordinator.domain.ports import Reader, Store, Tx

from .conftest import PORT_MARK


def port_members() -> set[str]:
    """The public methods and attributes the Protocols declare (their own and inherited)."""
    names: set[str] = set()
    for protocol in (Reader, Tx, Store):
        for cls in protocol.__mro__:
            if not getattr(cls, "_is_protocol", False) or cls.__module__ == "typing":
                continue
            names |= {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}
            names |= {n for n in getattr(cls, "__annotations__", {}) if not n.startswith("_")}
    return names


def covered() -> dict[str, list[str]]:
    """Port member -> the contract cases that declare it."""
    cases: dict[str, list[str]] = {}
    for module_info in pkgutil.iter_modules(tests.contract.__path__):
        if not module_info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"tests.contract.{module_info.name}")
        for name, case in vars(module).items():
            if not name.startswith("test_"):
                continue
            marks: list[Any] = getattr(case, "pytestmark", [])
            for mark in marks:
                if mark.name == PORT_MARK:
                    for method in mark.args:
                        cases.setdefault(method, []).append(f"{module_info.name}::{name}")
    return cases


def test_every_port_member_has_a_contract_case() -> None:
    members = port_members()
    # The probe really sees the port (guards against passing vacuously).
    assert {"append", "claim_candidates", "read", "write", "now", "get_grant"} <= members
    missing = sorted(members - set(covered()))
    assert missing == [], f"port members without a contract case: {missing}"


def test_every_declared_method_is_a_port_member() -> None:
    unknown = sorted(set(covered()) - port_members())
    assert unknown == [], f"contract cases name methods the port does not have: {unknown}"
