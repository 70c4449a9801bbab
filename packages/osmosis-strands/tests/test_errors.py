"""Policy failures map onto the failure taxonomy (http_error / timeout)."""

from __future__ import annotations

import importlib
from typing import Any

import httpx
import openai

from osmosis_ai.rollout.errors import PolicyHTTPError, categorize_exception
from osmosis_ai.rollout.integrations.agents.strands.errors import (
    PolicyTimeoutError,
    translate_policy_error,
)
from osmosis_ai.rollout.types import RolloutErrorCategory

URL = "http://127.0.0.1:1/v1/rollouts/r1"


def _openai_http() -> Any:
    """The HTTP library the installed openai is built on (openai 3 uses ``httpx2``)."""
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return httpx


HTTP = _openai_http()


def _status_error(status: int, text: str) -> openai.APIStatusError:
    request = HTTP.Request("POST", URL + "/chat/completions")
    response = HTTP.Response(status, text=text, request=request)
    return openai.APIStatusError("failed", response=response, body=None)


def test_status_errors_keep_the_status_and_a_body_excerpt() -> None:
    translated = translate_policy_error(_status_error(502, "bad gateway " + "x" * 2000), URL)
    assert isinstance(translated, PolicyHTTPError)
    assert translated.status_code == 502
    assert translated.body_excerpt.startswith("bad gateway")
    assert len(translated.body_excerpt) <= 500
    assert categorize_exception(translated) == RolloutErrorCategory.HTTP_ERROR


def test_timeouts_are_timeout_errors() -> None:
    request = HTTP.Request("POST", URL)
    translated = translate_policy_error(openai.APITimeoutError(request=request), URL)
    assert isinstance(translated, PolicyTimeoutError)
    assert isinstance(translated, TimeoutError)
    assert categorize_exception(translated) == RolloutErrorCategory.TIMEOUT


def test_transport_errors_without_a_response_are_http_errors() -> None:
    for library in {httpx, HTTP}:
        translated = translate_policy_error(library.RemoteProtocolError("peer closed"), URL)
        assert isinstance(translated, PolicyHTTPError)
        assert translated.status_code is None
        assert "RemoteProtocolError" in str(translated)
        timed_out = translate_policy_error(library.ReadTimeout("slow"), URL)
        assert isinstance(timed_out, PolicyTimeoutError)


def test_everything_else_is_left_alone() -> None:
    assert translate_policy_error(ValueError("agent bug"), URL) is None
