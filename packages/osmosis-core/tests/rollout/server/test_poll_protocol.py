"""0.3.8 poll protocol conformance: status codes, bodies and check order (delta §1 and §8),
driven over real HTTP against uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import math

import httpx
import pytest

from osmosis_ai.rollout.types import RolloutStatus

from .rollout_server_harness import LEASE, FakeBackend, body, final_result, running


async def _admit(client: httpx.AsyncClient, rollout_id: str = "r1", **fields: object) -> str:
    response = await client.post("/rollout", json=body(rollout_id, **fields))
    assert response.status_code == 202, response.text
    return response.json()["polling_lease_token"]


async def _poll(client: httpx.AsyncClient, rollout_id: str, token: str) -> dict:
    response = await client.get(f"/rollout/{rollout_id}/result", headers={LEASE: token})
    assert response.status_code == 200, response.text
    return response.json()


async def test_admission_answers_202_with_a_lease(backend: FakeBackend) -> None:
    async with running(backend, result_wait_timeout_sec=2.0, polling_lease_timeout_sec=5.0) as (
        client,
        _,
    ):
        response = await client.post("/rollout", json=body("r1"))
        assert response.status_code == 202
        payload = response.json()
        assert payload["rollout_id"] == "r1"
        assert payload["status"] == "queued"
        assert len(payload["polling_lease_token"]) == 43
        assert payload["result_wait_timeout_sec"] == 2.0
        assert payload["polling_lease_timeout_sec"] == 5.0


async def test_full_lifecycle_running_grading_success(backend: FakeBackend) -> None:
    async with running(backend, result_wait_timeout_sec=0.3, polling_lease_timeout_sec=5.0) as (
        client,
        _,
    ):
        token = await _admit(client, "r1", metadata={"mode": "staged"})
        await backend.started_event("r1").wait()
        # No change within the wait: only rollout_id and status carry values.
        idle = await _poll(client, "r1", token)
        assert idle == {
            "rollout_id": "r1",
            "status": "running",
            "sample": None,
            "err_message": None,
            "err_category": None,
        }
        waiting = asyncio.create_task(_poll(client, "r1", token))
        await asyncio.sleep(0)
        backend.gate("r1").set()
        assert (await waiting)["status"] == "grading"
        backend.gate("r1:grading").set()
        final = await final_result(client, "r1", token)
        assert final["status"] == "success"
        assert final["err_message"] is None
        assert final["err_category"] is None
        sample = final["sample"]
        assert set(sample) == {
            "messages",
            "label",
            "reward",
            "remove_sample",
            "metrics",
            "extra_fields",
        }
        assert sample["reward"] == 1.0
        assert sample["label"] == "42"
        assert sample["messages"][-1] == {"role": "assistant", "content": "#### 42"}
        # A finished result is returned again, immediately, to the lease holder.
        assert await _poll(client, "r1", token) == final


async def test_the_server_enters_a_rollout_context_around_execute(
    backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running(backend) as (client, _):
        token = await _admit(client, "r1", llm_api_key="llm-key", grade=False, agent_timeout_sec=3)
        await final_result(client, "r1", token)
        monkeypatch.setenv("OSMOSIS_API_KEY", "env-key")
        token2 = await _admit(client, "r2")
        await final_result(client, "r2", token2)
    assert backend.contexts["r1"] == ("http://127.0.0.1:9/v1/rollouts/r1", "llm-key", "r1")
    assert backend.contexts["r2"][1] == "env-key"  # null llm_api_key falls back to the env
    request = backend.requests[0]
    assert (request.id, request.grade, request.agent_timeout_sec, request.label) == (
        "r1",
        False,
        3,
        "42",
    )


async def test_grade_false_gives_success_without_reward(backend: FakeBackend) -> None:
    async with running(backend) as (client, _):
        token = await _admit(client, "r1", grade=False)
        final = await final_result(client, "r1", token)
    assert final["status"] == "success"
    assert final["sample"]["reward"] is None


@pytest.mark.parametrize(
    ("mode", "category", "message"),
    [
        ("raise", "agent_error", "kaboom"),
        ("workflow_error", "agent_error", "kaboom"),
        ("timeout", "timeout", "workflow exceeded its 0.1s deadline"),
        (
            "return_none",
            "internal_error",
            "backend.execute returned NoneType, expected ExecutionOutcome",
        ),
    ],
)
async def test_failures_carry_category_and_message(
    backend: FakeBackend, mode: str, category: str, message: str
) -> None:
    async with running(backend) as (client, _):
        token = await _admit(client, "r1", metadata={"mode": mode})
        final = await final_result(client, "r1", token)
    assert (final["status"], final["err_category"], final["err_message"]) == (
        "failure",
        category,
        message,
    )


async def test_grader_failure_keeps_the_sample_without_reward(backend: FakeBackend) -> None:
    async with running(backend) as (client, _):
        token = await _admit(client, "r1", metadata={"mode": "grader_error"})
        final = await final_result(client, "r1", token)
    assert (final["status"], final["err_category"]) == ("failure", "validation_error")
    assert final["sample"] is not None
    assert final["sample"]["reward"] is None


async def test_removed_sample_has_no_reward_and_metrics_are_json_safe(backend: FakeBackend) -> None:
    async with running(backend) as (client, _):
        t1 = await _admit(client, "r1", metadata={"mode": "remove_sample"})
        t2 = await _admit(client, "r2", metadata={"mode": "nan_metrics"})
        t3 = await _admit(client, "r3", metadata={"mode": "unencodable"})
        removed, nan, odd = (
            await final_result(client, "r1", t1),
            await final_result(client, "r2", t2),
            await final_result(client, "r3", t3),
        )
    assert removed["status"] == "success"
    assert removed["sample"]["remove_sample"] is True
    assert removed["sample"]["reward"] is None
    assert nan["sample"]["metrics"] == {"y": 1}
    assert nan["sample"]["reward"] == 1.0
    # A sample that cannot be encoded at all is replaced by a reward-only sample.
    assert odd["sample"]["messages"] == []
    assert odd["sample"]["reward"] == 1.0


async def test_duplicate_ids_conflict_until_retention_ends(backend: FakeBackend) -> None:
    async with running(backend, result_retention_sec=0.3) as (client, _):
        token = await _admit(client, "r1", metadata={"mode": "block"})
        again = await client.post("/rollout", json=body("r1"))
        assert again.status_code == 409
        assert again.json() == {"detail": "rollout_id is already registered"}
        backend.gate("r1").set()
        await final_result(client, "r1", token)
        retained = await client.post("/rollout", json=body("r1"))
        assert retained.status_code == 409
        # Retention is time-based: after it the id is forgotten (404) and reusable (202).
        await asyncio.sleep(0.5)  # the behaviour under test is the passage of time
        gone = await client.get("/rollout/r1/result", headers={LEASE: token})
        assert gone.status_code == 404
        assert (await client.post("/rollout", json=body("r1"))).status_code == 202


@pytest.mark.parametrize(
    ("payload", "loc", "msg"),
    [
        (body(None), ["body", "rollout_id"], "Field required"),
        (body("a/b"), ["body", "rollout_id"], "single path segment"),
        (body(".."), ["body", "rollout_id"], "single path segment"),
        (body("r1", llm_api_key=""), ["body", "llm_api_key"], "non-empty string"),
        (body("r1", initial_messages="hi"), ["body", "initial_messages"], "valid array"),
        ({"rollout_id": "r1"}, ["body", "initial_messages"], "Field required"),
    ],
)
async def test_invalid_bodies_get_422_naming_the_field(
    backend: FakeBackend, payload: dict, loc: list[str], msg: str
) -> None:
    async with running(backend) as (client, _):
        response = await client.post("/rollout", json=payload)
    assert response.status_code == 422
    details = response.json()["detail"]
    assert any(d["loc"] == loc and msg in d["msg"] for d in details), details


async def test_non_finite_timeout_and_bad_json_get_422(backend: FakeBackend) -> None:
    raw = (
        b'{"rollout_id":"r1","initial_messages":[],"chat_completions_url":"http://x",'
        b'"agent_timeout_sec":NaN}'
    )
    async with running(backend) as (client, _):
        nan = await client.post(
            "/rollout", content=raw, headers={"content-type": "application/json"}
        )
        broken = await client.post("/rollout", content=b"{not json")
    assert nan.status_code == 422
    assert any("finite" in d["msg"] for d in nan.json()["detail"])
    assert broken.status_code == 422
    assert math.isfinite(len(broken.json()["detail"]))


async def test_validation_errors_never_echo_keys(backend: FakeBackend) -> None:
    async with running(backend) as (client, _):
        response = await client.post(
            "/rollout", json=body("r1", llm_api_key=["sk-very-secret"], controller_api_key=7)
        )
    assert response.status_code == 422
    assert "sk-very-secret" not in response.text


async def test_result_endpoint_check_order(backend: FakeBackend) -> None:
    async with running(backend) as (client, _):
        token = await _admit(client, "r1")
        missing = await client.get("/rollout/r1/result")
        empty = await client.get("/rollout/r1/result", headers={LEASE: ""})
        unknown = await client.get("/rollout/nope/result", headers={LEASE: "whatever"})
        wrong = await client.get("/rollout/r1/result", headers={LEASE: token[:-1] + "x"})
        ok = await client.get("/rollout/r1/result", headers={LEASE: token})
    assert missing.status_code == 422
    assert missing.json()["detail"][0]["loc"] == ["header", "x-osmosis-rollout-lease"]
    assert empty.status_code == 422
    assert unknown.status_code == 404
    assert unknown.json() == {"detail": "unknown rollout_id"}
    assert wrong.status_code == 403
    assert wrong.json() == {"detail": "invalid polling lease"}
    assert ok.status_code == 200


async def test_full_backend_gets_429_with_retry_after_before_the_duplicate_check(
    backend: FakeBackend,
) -> None:
    async with running(backend) as (client, _):
        await _admit(client, "r1", metadata={"mode": "block"})
        backend.capacity = False
        full = await client.post("/rollout", json=body("r2"))
        duplicate = await client.post("/rollout", json=body("r1"))
        invalid = await client.post("/rollout", json=body("a/b"))
        backend.capacity = True
        backend.gate("r1").set()
    assert full.status_code == 429
    assert full.headers["retry-after"] == "5"
    assert full.json() == {"detail": "rollout queue is full; retry later"}
    assert duplicate.status_code == 429
    assert invalid.status_code == 422  # validation comes before capacity


async def test_draining_refuses_new_rollouts_but_serves_polls(backend: FakeBackend) -> None:
    async with running(backend) as (client, service):
        token = await _admit(client, "r1", metadata={"mode": "block"})
        service.begin_drain()
        refused = await client.post("/rollout", json=body("r2"))
        full_and_draining = await client.post("/rollout", json=body("r1"))
        health = (await client.get("/health")).json()
        backend.gate("r1").set()
        final = await final_result(client, "r1", token)
    assert refused.status_code == 503
    assert refused.json() == {"detail": "rollout server is shutting down"}
    assert full_and_draining.status_code == 503
    assert health["lifecycle"] == {"accepting_rollouts": False, "active_rollouts": 1}
    assert final["status"] == "success"


async def test_body_limit_answers_413_for_declared_and_streamed_bodies(
    backend: FakeBackend,
) -> None:
    big = body("r1", metadata={"pad": "x" * 4000})

    async def chunks():
        yield b'{"rollout_id":"r2","initial_messages":[],"chat_completions_url":"http://x",'
        for _ in range(10):
            yield b'"pad":"' + b"y" * 1000 + b'",'
        yield b'"label":"z"}'

    async with running(backend, max_body_bytes=2048) as (client, _):
        declared = await client.post("/rollout", json=big)
        streamed = await client.post("/rollout", content=chunks())
        small = await client.post("/rollout", json=body("r3"))
    assert declared.status_code == 413
    assert "max_body_bytes" in declared.json()["detail"]
    assert streamed.status_code == 413
    assert small.status_code == 202


async def test_health_reports_identity_and_lifecycle(
    backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running(backend) as (client, _):
        await _admit(client, "r1", metadata={"mode": "block"})
        response = await client.get("/health")
        backend.gate("r1").set()
    payload = response.json()
    assert payload["status"] == "ok"
    assert "concurrency" in payload
    assert payload["instance_id"] == payload["process_id"]
    assert len(payload["process_id"]) == 36
    assert payload["lifecycle"] == {"accepting_rollouts": True, "active_rollouts": 1}
    assert response.headers["x-osmosis-rollout-instance-id"] == payload["instance_id"]
    monkeypatch.setenv("_OSMOSIS_ROLLOUT_INSTANCE_ID", "i1")
    async with running(FakeBackend()) as (client, _):
        assert (await client.get("/health")).json()["instance_id"] == "i1"


async def test_status_endpoint_is_kept_for_operators(backend: FakeBackend) -> None:
    async with running(backend) as (client, _):
        token = await _admit(client, "r1")
        await final_result(client, "r1", token)
        known = (await client.get("/rollout/r1/status")).json()
        unknown = (await client.get("/rollout/x/status")).json()
    assert known == {"rollout_id": "r1", "status": "success", "reward": 1.0, "err_message": None}
    assert unknown == {"rollout_id": "x", "status": "unknown", "reward": None, "err_message": None}


async def test_cancel_dispositions_and_result(backend: FakeBackend) -> None:
    async with running(backend) as (client, _):
        t1 = await _admit(client, "r1")
        await final_result(client, "r1", t1)
        t7 = await _admit(client, "r7", metadata={"mode": "block"})
        await backend.started_event("r7").wait()
        response = await client.post("/rollout/cancel", json={"ids": ["r7", "nope", "r1"]})
        repeat = await client.post("/rollout/cancel", json={"ids": ["r7"]})
        final = await final_result(client, "r7", t7)
        bad = [
            await client.post("/rollout/cancel", json=selector)
            for selector in ({}, {"ids": ["x"], "all": True}, {"prefix": "r", "ids": []})
        ]
    assert response.status_code == 200
    assert response.json() == {
        "dispositions": {"r7": "cancelled_running", "nope": "not_found", "r1": "not_found"}
    }
    assert repeat.json()["dispositions"]["r7"] in ("cancelled_running", "not_found")
    assert (final["status"], final["err_message"], final["err_category"]) == (
        "cancelled",
        "cancelled",
        None,
    )
    assert "r7" in backend.cancelled
    for response in bad:
        assert response.status_code == 422
        assert "pass exactly one selector" in response.text


async def test_cancel_by_prefix_and_all(backend: FakeBackend) -> None:
    async with running(backend) as (client, _):
        for rid in ("a-1", "a-2", "b-1"):
            await _admit(client, rid, metadata={"mode": "block"})
            await backend.started_event(rid).wait()
        by_prefix = (await client.post("/rollout/cancel", json={"prefix": "a-"})).json()
        backend.cancel_reply = {"b-1": "cancelled_queued"}  # ignored: the server owns cancelling
        everything = (await client.post("/rollout/cancel", json={"all": True})).json()
    assert by_prefix["dispositions"] == {"a-1": "cancelled_running", "a-2": "cancelled_running"}
    # a-1 and a-2 have finished (cancelled): not_found; b-1's disposition is the server's own.
    assert everything["dispositions"] == {
        "a-1": "not_found",
        "a-2": "not_found",
        "b-1": "cancelled_running",
    }
    assert backend.cancelled == {"a-1", "a-2", "b-1"}


async def test_cancel_before_the_task_ran_is_cancelled_queued(backend: FakeBackend) -> None:
    from osmosis_ai.rollout.types import RolloutInitRequest

    async with running(backend) as (client, service):
        service.admit(RolloutInitRequest.model_validate(body("q1")))
        # Same loop iteration: the execution task has not started yet.
        assert service.cancel(["q1"]) == {"q1": "cancelled_queued"}
        entry = service.entries["q1"]
        assert entry.task is not None
        await asyncio.wait({entry.task})
        response = await client.get("/rollout/q1/result", headers={LEASE: "wrong"})
    assert response.status_code == 403
    assert entry.status == RolloutStatus.CANCELLED
    assert entry.err_message is None
    assert "q1" not in backend.contexts  # never executed


async def test_lease_expiry_fails_and_cancels_the_rollout(backend: FakeBackend) -> None:
    async with running(backend, result_wait_timeout_sec=0.2, polling_lease_timeout_sec=0.5) as (
        client,
        _,
    ):
        token = await _admit(client, "r1", metadata={"mode": "block"})
        await backend.started_event("r1").wait()
        await asyncio.sleep(0.7)  # the behaviour under test is the passage of time
        final = await _poll(client, "r1", token)
    assert final == {
        "rollout_id": "r1",
        "status": "failure",
        "sample": None,
        "err_message": "polling lease expired",
        "err_category": "lease_expired",
    }
    assert "r1" in backend.cancelled


async def test_polling_renews_the_lease(backend: FakeBackend) -> None:
    # Each poll waits 0.3 s, well inside the 1.5 s lease (a loaded machine's scheduling gaps must
    # not expire it), and 7 polls outlast the lease: only renewal keeps the token valid.
    async with running(backend, result_wait_timeout_sec=0.3, polling_lease_timeout_sec=1.5) as (
        client,
        _,
    ):
        token = await _admit(client, "r1", metadata={"mode": "block"})
        for _ in range(7):  # 2.1 s of polling, longer than the lease
            assert (await _poll(client, "r1", token))["status"] == "running"
        backend.gate("r1").set()
        final = await final_result(client, "r1", token)
    assert final["status"] == "success"


async def test_auth_guards_every_route_before_validation(
    backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running(backend, api_key="sek") as (client, _):
        rejected = [
            await client.get("/health"),
            await client.get("/health", headers={"Authorization": "Bearer x"}),
            await client.get("/health", headers={"Authorization": "Basic sek"}),
            await client.get("/health", headers={"Authorization": "Bearer sekX"}),
            await client.get("/health", headers={"Authorization": "Bearer"}),
            await client.post("/rollout", json={"bad": 1}, headers={"Authorization": "Bearer x"}),
            await client.get("/openapi.json"),
            await client.get("/rollout/r1/status"),
        ]
        # The scheme is case-insensitive (RFC 7235), the token is not.
        accepted = [
            await client.get("/health", headers={"Authorization": value})
            for value in ("Bearer sek", "bearer sek", "BEARER sek", "Bearer  sek")
        ]
        wrong_case_token = await client.get("/health", headers={"Authorization": "Bearer SEK"})
    for response in [*rejected, wrong_case_token]:
        assert response.status_code == 401
        assert response.json() == {"detail": "unauthorized"}
    assert [response.status_code for response in accepted] == [200] * 4
    monkeypatch.setenv("OSMOSIS_ROLLOUT_API_KEY", "from-env")
    async with running(FakeBackend()) as (client, _):
        assert (await client.get("/health")).status_code == 401
        assert (
            await client.get("/health", headers={"Authorization": "Bearer from-env"})
        ).status_code == 200


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"result_wait_timeout_sec": 0},
            "result_wait_timeout_sec must be finite and greater than zero",
        ),
        ({"result_wait_timeout_sec": math.inf}, "result_wait_timeout_sec must be finite"),
        (
            {"polling_lease_timeout_sec": 30.0},
            "polling_lease_timeout_sec must exceed result_wait_timeout_sec",
        ),
        (
            {"polling_lease_timeout_sec": math.nan},
            "timeout_sec must be finite and greater than zero",
        ),
        ({"result_retention_sec": -1}, "result_retention_sec must be finite and non-negative"),
        ({"api_key": "  "}, "api_key must be non-empty when provided"),
        ({"max_body_bytes": 10}, "max_body_bytes"),
    ],
)
def test_constructor_rejects_bad_settings(options: dict, message: str) -> None:
    from osmosis_ai.rollout.server import create_rollout_server

    with pytest.raises(ValueError, match=message):
        create_rollout_server(backend=FakeBackend(), **options)


def test_constructor_rejects_a_non_backend() -> None:
    from osmosis_ai.rollout.server import create_rollout_server

    with pytest.raises(TypeError, match="ExecutionBackend"):
        create_rollout_server(backend=object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "message", "category"),
    [
        (RolloutStatus.SUCCESS, None, None),
        (RolloutStatus.FAILURE, 'caf\u00e9 "quoted"\n\u2028 \\', "timeout"),
        (RolloutStatus.FAILURE, "lone \udc80 surrogate", "agent_error"),
        (RolloutStatus.CANCELLED, "", None),
    ],
)
def test_result_bytes_are_the_compact_json_of_the_result(
    status: RolloutStatus, message: str | None, category: str | None
) -> None:
    """The wire bytes are exactly ``json.dumps`` (compact, UTF-8, keys in 0.3.8's order) of the
    result, whichever of its fields are null."""
    import json

    from osmosis_ai.rollout.server._impl import wire
    from osmosis_ai.rollout.types import ExecutionResult, RolloutErrorCategory

    err_category = RolloutErrorCategory(category) if category else None
    result = ExecutionResult(status=status, err_message=message, err_category=err_category)
    expected = {
        "rollout_id": "r\u00e9",
        "status": status.value,
        "sample": None,
        "err_message": wire.clean_text(message),
        "err_category": err_category.value if err_category else None,
    }
    encoded = json.dumps(expected, ensure_ascii=False, separators=(",", ":")).encode()
    assert wire.result_json("r\u00e9", result) == encoded
