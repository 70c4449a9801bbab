"""Fixtures for the real-model tests: SmolLM2-135M-Instruct on llama.cpp's OpenAI-compatible
server (``osmosis_ai.testing.LocalModelServer``), offline. Run by ``nox -s real-model``.

Without the ``local-model`` extra these tests skip, saying what to install; the nox session sets
``OSMOSIS_REQUIRE_LOCAL_MODEL=1``, so in CI a missing model fails instead of skipping.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

# pytest runs with --import-mode=importlib: make the sibling helper modules importable.
sys.path.insert(0, str(Path(__file__).parents[1] / "eval"))  # eval_support.Cli
sys.path.insert(0, str(Path(__file__).parent))

import pytest
from eval_support import Cli
from real_model_support import ARTIFACTS, TEMPLATES


def _require_local_model() -> None:
    from osmosis_ai.testing.local_model import (
        LocalModelUnavailable,
        check_server_installed,
        find_model_file,
    )

    try:
        find_model_file()
        check_server_installed()
    except LocalModelUnavailable as exc:
        if os.environ.get("OSMOSIS_REQUIRE_LOCAL_MODEL"):
            pytest.fail(f"the real model is required here: {exc}")
        pytest.skip(f"no real model: {exc}")


@pytest.fixture(scope="session", autouse=True)
def _local_model_installed() -> None:
    _require_local_model()


@pytest.fixture(scope="session")
def tool_calling_model() -> Iterator[object]:
    """The model under llama-cpp-python's ``chatml-function-calling`` format: real tool calls
    (only when the request says ``tool_choice: "auto"``; it cannot stream them)."""
    from osmosis_ai.testing import LocalModelServer

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # One server per pytest-xdist worker (each has its own session), each with its own log.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    log = ARTIFACTS / (f"tool-calling-model-{worker}.log" if worker else "tool-calling-model.log")
    with LocalModelServer(chat_format="chatml-function-calling", log_path=log) as model:
        yield model


@pytest.fixture(scope="session")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    return Cli(home=tmp_path_factory.mktemp("osmosis-home"))


@pytest.fixture(scope="session")
def workspace(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with the multiply templates and the rubric template applied."""
    root = tmp_path_factory.mktemp("real-model") / "ws"
    assert cli.run("init", str(root), cwd=root.parent).code == 0
    for template in (*TEMPLATES, "rubric-judge-local"):
        applied = cli.run("template", "apply", template, cwd=root)
        assert applied.code == 0, applied.stderr
    return root
