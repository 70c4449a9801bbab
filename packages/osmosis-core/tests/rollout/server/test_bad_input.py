"""Bad input at admission: invalid callback URLs, control characters in ids, strict-JSON 422s."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .rollout_server_harness import FakeBackend, body, running


def _strict_json(raw: bytes) -> Any:
    """Parse as a strict parser would: the NaN/Infinity literals are errors."""

    def refuse(literal: str) -> Any:
        raise ValueError(f"non-standard JSON literal {literal}")

    return json.loads(raw, parse_constant=refuse)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("", "got an empty string"),
        ("not a url", "whitespace"),
        ("ftp://controller.example/cb", "got scheme 'ftp'"),
        ("controller.example/cb", "no scheme"),
        ("http://", "no host"),
    ],
)
@pytest.mark.parametrize("field", ["completion_callback_url", "grader_callback_url"])
async def test_invalid_callback_urls_are_rejected_at_admission(
    backend: FakeBackend, field: str, url: str, problem: str
) -> None:
    extra = {"completion_callback_url": "http://127.0.0.1:9/done", field: url}
    async with running(backend) as (client, _):
        response = await client.post("/rollout", json=body("r1", **extra))
        health = (await client.get("/health")).json()
    assert response.status_code == 422, response.text
    [detail] = response.json()["detail"]
    assert detail["loc"] == ["body", field]
    assert f"{field} must be an absolute http:// or https:// URL" in detail["msg"]
    assert problem in detail["msg"]
    assert health["lifecycle"]["active_rollouts"] == 0
    assert backend.requests == []


async def test_a_rejected_callback_url_is_echoed_without_its_credentials(
    backend: FakeBackend,
) -> None:
    url = "ftp://ops:hunter2@controller.example/cb?api_key=sk-123"
    async with running(backend) as (client, _):
        response = await client.post("/rollout", json=body("r1", completion_callback_url=url))
    assert response.status_code == 422
    assert "hunter2" not in response.text
    assert "sk-123" not in response.text
    [detail] = response.json()["detail"]
    assert detail["input"] == "ftp://***@controller.example/cb?***"


@pytest.mark.parametrize("rollout_id", ["r1\nINFO forged line", "r1\r", "tab\there", "nel\x85"])
async def test_rollout_ids_with_control_characters_are_rejected(
    backend: FakeBackend, rollout_id: str
) -> None:
    async with running(backend) as (client, _):
        response = await client.post("/rollout", json=body(rollout_id))
    assert response.status_code == 422
    [detail] = response.json()["detail"]
    assert detail["loc"] == ["body", "rollout_id"]
    assert "must not contain control characters" in detail["msg"]
    assert backend.requests == []


async def test_422_bodies_are_strict_json_even_for_nan_input(backend: FakeBackend) -> None:
    admission = (
        b'{"rollout_id":"r1","initial_messages":[],"chat_completions_url":"http://x",'
        b'"agent_timeout_sec":NaN,"grader_timeout_sec":-Infinity,"metadata":[Infinity]}'
    )
    headers = {"content-type": "application/json"}
    async with running(backend) as (client, _):
        admitted = await client.post("/rollout", content=admission, headers=headers)
        cancel = await client.post("/rollout/cancel", content=b'{"all":NaN}', headers=headers)
    assert admitted.status_code == 422
    inputs = {d["loc"][-1]: d["input"] for d in _strict_json(admitted.content)["detail"]}
    assert inputs == {
        "agent_timeout_sec": "NaN",
        "grader_timeout_sec": "-Infinity",
        "metadata": ["Infinity"],
    }
    assert cancel.status_code == 422
    [detail] = _strict_json(cancel.content)["detail"]
    assert detail["input"] == "NaN"
