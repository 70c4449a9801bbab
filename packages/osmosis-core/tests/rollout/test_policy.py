"""The core policy layer: active rollout, error translation, usage and call records.

Everything here runs without ``openai`` installed (core does not depend on it); the client tests
that need it are in ``test_policy_client.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import httpx
import pytest

from osmosis_ai.errors import (
    NoActiveRolloutError,
    OsmosisError,
    PolicyHTTPError,
    PolicyTimeoutError,
)
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.errors import PolicyHTTPError as LegacyPolicyHTTPError
from osmosis_ai.rollout.errors import categorize_exception
from osmosis_ai.rollout.policy import (
    CallObserver,
    PolicyCall,
    public_url,
    require_active_rollout,
    translate_policy_error,
    translating_policy_errors,
    usage_dict,
)
from osmosis_ai.rollout.types import RolloutErrorCategory

URL = "http://127.0.0.1:1/v1/rollouts/r1"


def test_no_active_rollout_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSMOSIS_CHAT_COMPLETIONS_URL", raising=False)
    with pytest.raises(NoActiveRolloutError) as caught:
        require_active_rollout("MyFrameworkModel")
    message = str(caught.value)
    assert message.startswith("MyFrameworkModel was called outside a rollout")
    assert "run_rollout" in message
    assert "RolloutContext(chat_completions_url=" in message
    assert isinstance(caught.value, RuntimeError)
    assert isinstance(caught.value, OsmosisError)


def test_a_rollout_without_a_policy_url_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSMOSIS_CHAT_COMPLETIONS_URL", raising=False)
    with RolloutContext(rollout_id="r-nourl"), pytest.raises(NoActiveRolloutError) as caught:
        require_active_rollout()
    assert "'r-nourl' has no chat_completions_url" in str(caught.value)
    assert "OSMOSIS_CHAT_COMPLETIONS_URL" in str(caught.value)
    with RolloutContext(chat_completions_url=URL, rollout_id="r1") as ctx:
        assert require_active_rollout() is ctx


def test_policy_http_error_moved_to_the_one_tree_and_keeps_its_old_path() -> None:
    assert LegacyPolicyHTTPError is PolicyHTTPError
    assert issubclass(PolicyTimeoutError, PolicyHTTPError)
    assert issubclass(PolicyTimeoutError, TimeoutError)


def test_transport_errors_become_policy_errors_with_the_url_but_no_secret() -> None:
    secret_url = "http://user:s3cret@127.0.0.1:1/v1/rollouts/r1?token=abc"
    translated = translate_policy_error(httpx.RemoteProtocolError("peer closed"), secret_url)
    assert isinstance(translated, PolicyHTTPError)
    assert translated.status_code is None
    assert "RemoteProtocolError" in str(translated)
    assert translated.url == URL
    assert "s3cret" not in str(translated)
    assert "token" not in str(translated)
    assert categorize_exception(translated) == RolloutErrorCategory.HTTP_ERROR
    timed_out = translate_policy_error(httpx.ReadTimeout("slow"), URL)
    assert isinstance(timed_out, PolicyTimeoutError)
    assert categorize_exception(timed_out) == RolloutErrorCategory.TIMEOUT


def test_other_errors_are_left_alone_and_policy_errors_kept() -> None:
    assert translate_policy_error(ValueError("agent bug"), URL) is None
    original = PolicyHTTPError(502, "bad gateway", URL)
    assert translate_policy_error(original, URL) is original
    with pytest.raises(ValueError, match="agent bug"), translating_policy_errors(URL):
        raise ValueError("agent bug")
    with pytest.raises(PolicyTimeoutError) as caught, translating_policy_errors(URL):
        raise httpx.ConnectTimeout("no answer")
    assert isinstance(caught.value.__cause__, httpx.ConnectTimeout)


def test_public_url_drops_credentials_and_query() -> None:
    assert (
        public_url("https://u:p@host.example:8443/v1/x?key=1#f") == "https://host.example:8443/v1/x"
    )
    assert public_url(URL) == URL


def test_one_usage_normaliser_for_chat_and_responses_usage() -> None:
    chat = SimpleNamespace(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    assert usage_dict(chat) == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    responses = SimpleNamespace(input_tokens=7, output_tokens=3, total_tokens=0)
    assert usage_dict(responses) == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert usage_dict({"input_tokens": 2, "output_tokens": 1}) == {
        "prompt_tokens": 2,
        "completion_tokens": 1,
        "total_tokens": 3,
    }
    assert usage_dict(SimpleNamespace(input_tokens=0, output_tokens=0, total_tokens=0)) is None
    assert usage_dict(None) is None


def test_call_observer_keeps_the_served_model_and_the_last_usage() -> None:
    observer = CallObserver()
    observer.observe(SimpleNamespace(model="served-7b", usage=None))
    observer.observe(
        SimpleNamespace(model="", usage=SimpleNamespace(prompt_tokens=4, completion_tokens=2))
    )
    assert observer.record("osmosis-rollout") == PolicyCall(
        model="served-7b",
        usage={"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
    )
    assert CallObserver().record("osmosis-rollout") == PolicyCall(model="osmosis-rollout")


def test_an_error_event_inside_a_stream_is_an_http_error_not_the_agents_bug() -> None:
    """openai raises a bare ``APIError`` for an error event in a 200 stream (the eval proxy sends
    one when the model server broke the stream off): an infrastructure failure, never reward 0."""
    from typing import Any

    import openai

    from osmosis_ai.errors import PolicyHTTPError
    from osmosis_ai.rollout.policy import translate_policy_error

    # openai builds on httpx or its fork httpx2, whichever it ships with: its own Request type.
    request: Any = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    exc = openai.APIError("the model server's response stream broke off", request, body=None)
    translated = translate_policy_error(exc, "http://127.0.0.1:9/v1")
    assert isinstance(translated, PolicyHTTPError)
    assert translated.status_code == 200
    assert "stream error: the model server's response stream broke off" in str(translated)
