"""Fixtures of the eval tests: an isolated OSMOSIS_HOME, a tiny rollout workspace, and no provider
key or judge setting leaking in from the developer's environment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.eval.judge.providers import PROVIDERS

from .tiny_rollout import write_workspace


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSMOSIS_HOME", str(tmp_path / "osmosis-home"))


@pytest.fixture
def workspace(tmp_path: Path) -> Callable[..., Path]:
    """``workspace(**kw)`` writes a tiny rollout workspace and returns its eval config path."""

    def make(**kwargs: Any) -> Path:
        root = tmp_path / "ws"
        return write_workspace(root, **kwargs)

    return make


@pytest.fixture(autouse=True)
def clean_judge_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for spec in PROVIDERS.values():
        if spec.key_env:
            monkeypatch.delenv(spec.key_env, raising=False)
        monkeypatch.delenv(spec.base_url_env, raising=False)
    monkeypatch.delenv("OSMOSIS_JUDGE_CACHE", raising=False)
    monkeypatch.delenv("OSMOSIS_JUDGE_MAX_CONCURRENCY", raising=False)
