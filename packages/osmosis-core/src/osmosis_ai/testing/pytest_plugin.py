"""A pytest plugin with the fixtures a rollout project's tests (and osmosis' own framework
integrations) share. Opt in from a ``conftest.py``::

    pytest_plugins = ["osmosis_ai.testing.pytest_plugin"]

Fixtures:

* ``osmosis_home`` (autouse) — ``OSMOSIS_HOME`` points into the test's ``tmp_path`` (nothing a
  test runs writes to ``~/.osmosis``), and ``OSMOSIS_CHAT_COMPLETIONS_URL``, ``OSMOSIS_API_KEY``
  and ``OSMOSIS_ROLLOUT_ID`` are unset; returns that home.
* ``multiply_policy`` — a :class:`~osmosis_ai.testing.ScriptedPolicyServer` playing the
  built-in multiply solver (a ``multiply`` tool call, then ``#### <product>``) on ``127.0.0.1``;
  afterwards the event loop's pooled policy clients are closed.
* ``rollout_server`` — :func:`~osmosis_ai.testing.serve_app`: ``async with rollout_server(app)
  as base_url`` serves ``app`` (your ``create_rollout_server(...)``) under real uvicorn.

And a helper for expensive set-up: :func:`built_once` builds a directory once per pytest run
even under pytest-xdist (where each worker otherwise builds its own copy of a session- or
module-scoped fixture); it needs no ``pytest_plugins`` line.

It is a plugin you load, not an entry point pytest loads by itself: the autouse fixture changes
the environment of every test in the suite that loads it, which a project should choose. Like
any ``pytest_plugins`` line, it belongs in a conftest.py that pytest loads at start-up: the
rootdir's, or that of a folder named on the command line.

Needs ``pytest-asyncio`` (``pip install pytest-asyncio``) besides the ``server`` extra.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

try:
    import pytest_asyncio
except ModuleNotFoundError as _exc:  # pragma: no cover - a test dependency of every suite here
    raise ModuleNotFoundError(
        "osmosis_ai.testing.pytest_plugin needs pytest-asyncio for its async fixtures. "
        "Install it with: pip install pytest-asyncio",
        name=_exc.name,
    ) from _exc

from osmosis_ai.rollout.integrations.spi import aclose_policy_clients
from osmosis_ai.testing.policy_server import ScriptedPolicyServer
from osmosis_ai.testing.serving import serve_app

__all__ = ["ServeApp", "built_once", "multiply_policy", "osmosis_home", "rollout_server"]

#: What the ``rollout_server`` fixture returns: ``serve_app``'s shape (an app in, an async
#: context manager yielding the base URL out).
ServeApp = Callable[[Any], contextlib.AbstractAsyncContextManager[str]]

#: Variables that would point a test at a real policy or rollout; the autouse fixture unsets them.
_ROLLOUT_ENV = ("OSMOSIS_CHAT_COMPLETIONS_URL", "OSMOSIS_API_KEY", "OSMOSIS_ROLLOUT_ID")


@pytest.fixture(autouse=True)
def osmosis_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing a test runs may write to ~/.osmosis: ``OSMOSIS_HOME`` is ``tmp_path/osmosis-home``."""
    home = tmp_path / "osmosis-home"
    monkeypatch.setenv("OSMOSIS_HOME", str(home))
    for name in _ROLLOUT_ENV:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest_asyncio.fixture
async def multiply_policy() -> AsyncIterator[ScriptedPolicyServer]:
    """The built-in multiply solver: a ``multiply`` tool call, then ``#### <product>``."""
    async with ScriptedPolicyServer("multiply") as server:
        yield server
    await aclose_policy_clients()


@pytest.fixture
def rollout_server() -> ServeApp:
    """``async with rollout_server(app) as base_url`` serves ``app`` over real HTTP."""
    return serve_app


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Path]
) -> Path:
    """Run ``build(folder)`` once per pytest run and return what it returned (a path, usually
    inside ``folder``); every pytest-xdist worker asking for the same ``name`` waits for that one
    build and gets the same path. For a session- or module-scoped fixture whose product the tests
    only read (a venv, an eval run)::

        @pytest.fixture(scope="session")
        def venv(tmp_path_factory):
            return built_once(tmp_path_factory, "venv", make_venv)

    A build that raises is retried by the next worker that asks. Without ``fcntl`` (Windows)
    each worker builds its own."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's base folder, which every worker's folder sits in
    folder = base / f"built-once-{name}"
    record = base / f"built-once-{name}.path"
    try:
        import fcntl
    except ModuleNotFoundError:  # pragma: no cover - Windows: no sharing
        return build(tmp_path_factory.mktemp(name))
    with (base / f"built-once-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if record.exists():
            return Path(record.read_text(encoding="utf-8"))
        shutil.rmtree(folder, ignore_errors=True)  # what a failed build left
        folder.mkdir()
        product = build(folder)
        record.write_text(str(product), encoding="utf-8")
        return product
