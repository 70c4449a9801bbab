"""Judge tests: no provider key or judge setting leaks in from the developer's environment."""

from __future__ import annotations

import pytest

from osmosis_ai.eval.judge.providers import PROVIDERS


@pytest.fixture(autouse=True)
def clean_judge_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for spec in PROVIDERS.values():
        if spec.key_env:
            monkeypatch.delenv(spec.key_env, raising=False)
        monkeypatch.delenv(spec.base_url_env, raising=False)
    monkeypatch.delenv("OSMOSIS_JUDGE_CACHE", raising=False)
    monkeypatch.delenv("OSMOSIS_JUDGE_MAX_CONCURRENCY", raising=False)
