"""``create_rollout_server``'s keywords and ``ServerSettings`` are one list of options.

The keywords keep their public (0.3.8 and later) names; each default is ServerSettings'. A new
field without a keyword must be named in ``SETTINGS_ONLY``; a new keyword without a field fails.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.rollout.server._impl.settings import (
    SERVER_KEYWORDS,
    SETTINGS_ONLY,
    ServerSettings,
)

from .rollout_server_harness import FakeBackend

# Keywords that are not server settings: what to serve, and how to start.
NOT_SETTINGS = {"backend", "lifespan", "configure_logging", "api_key"}


def _keywords() -> dict[str, inspect.Parameter]:
    params = inspect.signature(create_rollout_server).parameters
    return {name: p for name, p in params.items() if name not in NOT_SETTINGS}


def test_every_keyword_is_a_field_with_the_same_default() -> None:
    fields = {f.name: f for f in dataclasses.fields(ServerSettings)}
    keywords = _keywords()
    assert set(keywords) <= set(fields), set(keywords) - set(fields)
    for name, param in keywords.items():
        assert param.kind is inspect.Parameter.KEYWORD_ONLY, name
        assert param.default == fields[name].default, name


def test_every_field_is_a_keyword_or_named_settings_only() -> None:
    names = [f.name for f in dataclasses.fields(ServerSettings)]
    assert set(names) == set(_keywords()) | SETTINGS_ONLY
    assert not SETTINGS_ONLY & set(_keywords())
    assert list(SERVER_KEYWORDS) == [n for n in names if n not in SETTINGS_ONLY]


def test_the_0_3_8_keywords_and_defaults_are_kept() -> None:
    # 0.3.8: result_wait_timeout_sec=30.0, polling_lease_timeout_sec=120.0,
    # result_retention_sec=900.0, api_key=None (reference/osmosis-0.3.8-delta.md §1.1).
    params = inspect.signature(create_rollout_server).parameters
    assert params["result_wait_timeout_sec"].default == 30.0
    assert params["polling_lease_timeout_sec"].default == 120.0
    assert params["result_retention_sec"].default == 900.0
    assert params["api_key"].default is None
    assert params["lifespan"].default is None
    assert params["configure_logging"].default is True


def test_the_service_gets_the_caller_s_values_and_the_defaults_otherwise(tmp_path: Path) -> None:
    given: dict[str, Any] = {
        "callback_timeout_sec": 3.0,
        "cancel_cleanup_sec": 2.0,
        "outbox_dir": str(tmp_path / "outbox"),
    }
    app = create_rollout_server(backend=FakeBackend(), configure_logging=False, **given)
    settings: ServerSettings = app.state.rollout_service.settings
    expected = dataclasses.replace(ServerSettings(), **{**given, "outbox_dir": tmp_path / "outbox"})
    assert settings == expected
    assert isinstance(settings.outbox_dir, Path)


def test_a_bad_value_is_refused_by_the_settings() -> None:
    with pytest.raises(ValueError, match="callback_timeout_sec must be greater than zero"):
        create_rollout_server(backend=FakeBackend(), callback_timeout_sec=0.0)
