"""Tenancy tests create the installation's one GLOBAL work coordinator and flip the platform
switch: installation-wide state, so every test here runs on a database of its own."""

from __future__ import annotations

import pytest

from tests.support.harness import Stack


@pytest.fixture
async def stack(isolated_stack: Stack) -> Stack:
    return isolated_stack
