"""Property: no ``POST /rollout`` body, however malformed, gets a 5xx or crashes the server.

The server runs once (in a thread, real HTTP) and hypothesis throws arbitrary JSON values,
mutated valid bodies (both protocols) and raw bytes at it.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from osmosis_ai.rollout.server import create_rollout_server

from .rollout_server_harness import FakeBackend, ThreadedServer, body

ALLOWED = {202, 409, 413, 422, 429}

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
rollout_ids = st.text(alphabet=string.printable + "é\u2028", min_size=0, max_size=12)
FIELDS = [
    "initial_messages",
    "label",
    "metadata",
    "rollout_id",
    "chat_completions_url",
    "llm_api_key",
    "grade",
    "agent_timeout_sec",
    "grader_timeout_sec",
    "extra_fields",
    "controller_api_key",
    "completion_callback_url",
    "grader_callback_url",
]


@st.composite
def mutated_bodies(draw: st.DrawFn) -> dict[str, Any]:
    payload = body(draw(rollout_ids))
    payload["metadata"] = {"mode": "success"}
    if draw(st.booleans()):
        payload["completion_callback_url"] = "http://127.0.0.1:9/cb"
        if draw(st.booleans()):
            payload.pop("rollout_id")
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        if draw(st.booleans()):
            payload.pop(field, None)
        else:
            payload[field] = draw(json_values)
    if isinstance(payload.get("metadata"), dict):
        payload["metadata"]["mode"] = "success"  # never ask the fake backend to block
    return payload


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    home: Path = tmp_path_factory.mktemp("fuzz-home")
    app = create_rollout_server(
        backend=FakeBackend(),
        configure_logging=False,
        max_body_bytes=4096,
        callback_retry_budget_sec=0.2,
        callback_backoff_initial_sec=0.01,
        drain_grace_sec=0.2,
        outbox_dir=home / "outbox",
        save_trajectories=False,
    )
    with ThreadedServer(app) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: ThreadedServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url) as http:
        yield http


def _check(response: httpx.Response) -> None:
    assert response.status_code in ALLOWED, (response.status_code, response.text)
    payload = response.json()
    if response.status_code != 202:
        assert "detail" in payload


_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(payload=json_values)
def test_arbitrary_json_never_5xx(client: httpx.Client, payload: Any) -> None:
    _check(client.post("/rollout", json=payload))


@_SETTINGS
@given(payload=mutated_bodies())
def test_mutated_bodies_never_5xx(client: httpx.Client, payload: dict[str, Any]) -> None:
    _check(client.post("/rollout", json=payload))
    assert client.get("/health").status_code == 200


@_SETTINGS
@given(raw=st.binary(max_size=6000))
def test_raw_bytes_never_5xx(client: httpx.Client, raw: bytes) -> None:
    _check(client.post("/rollout", content=raw, headers={"content-type": "application/json"}))
