"""Fixtures for the reliability tests (drain, crash durability, lost admissions)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

# pytest runs with --import-mode=importlib: make the sibling helper module importable.
sys.path.insert(0, str(Path(__file__).parent))

import pytest
from reliability_support import ServerProcess, free_port


@pytest.fixture
async def server_factory(tmp_path: Path) -> AsyncIterator[Any]:
    started: list[ServerProcess] = []

    def make(
        grace: float = 5.0, port: int | None = None, options: dict[str, Any] | None = None
    ) -> ServerProcess:
        server = ServerProcess(port or free_port(), tmp_path / "outbox", grace, options)
        started.append(server)
        return server

    yield make
    for server in started:
        await server.kill()
