"""The template rollout through the real rollout server (uvicorn, poll protocol, httpx)."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from osmosis_ai.rollout import LocalBackend
from osmosis_ai.rollout.server import POLLING_LEASE_HEADER, create_rollout_server
from osmosis_ai.testing import ScriptedPolicyServer, error_reply

ServeApp = Callable[[Any], contextlib.AbstractAsyncContextManager[str]]


def _load_template_module() -> Any:
    """The workflow and grader of test_rollout.py, importable as ``module:attr`` strings."""
    name = "osmosis_openai_agents_template_rollout"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name("test_rollout.py")
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


TEMPLATE = _load_template_module()


async def run_through_server(
    rollout_server: ServeApp, policy: ScriptedPolicyServer, rollout_id: str
) -> dict[str, Any]:
    backend = LocalBackend(workflow=TEMPLATE.MultiplyWorkflow, grader=TEMPLATE.MultiplyGrader)
    app = create_rollout_server(backend=backend, configure_logging=False, result_wait_timeout_sec=2)
    async with (
        rollout_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=10) as http,
    ):
        admitted = await http.post(
            "/rollout",
            json={
                "rollout_id": rollout_id,
                "initial_messages": [{"role": "user", "content": "What is 12 times 34?"}],
                "label": "408",
                "chat_completions_url": policy.chat_completions_url(rollout_id),
                "llm_api_key": "policy-key",
            },
        )
        assert admitted.status_code == 202, admitted.text
        lease = admitted.json()["polling_lease_token"]
        body: dict[str, Any] = {}
        for _ in range(20):
            polled = await http.get(
                f"/rollout/{rollout_id}/result", headers={POLLING_LEASE_HEADER: lease}
            )
            assert polled.status_code == 200, polled.text
            body = polled.json()
            if body["status"] in {"success", "failure", "cancelled"}:
                return body
    raise AssertionError(f"rollout {rollout_id} did not finish: {body}")


async def test_template_rollout_through_the_rollout_server(
    rollout_server: ServeApp, multiply_policy: ScriptedPolicyServer
) -> None:
    body = await run_through_server(rollout_server, multiply_policy, "srv-ok")
    assert body["status"] == "success", body
    assert body["sample"]["reward"] == 1.0
    messages = body["sample"]["messages"]
    assert messages[0]["role"] == "system"
    assert messages[-1]["content"][0]["text"] == "#### 408"
    assert "trajectory_messages" not in body["sample"]  # never on the wire
    requests = multiply_policy.requests_for("srv-ok")
    assert len(requests) == 2
    assert all(r.bearer_token == "policy-key" for r in requests)


async def test_policy_failure_through_the_rollout_server(rollout_server: ServeApp) -> None:
    async with ScriptedPolicyServer([error_reply(502, "bad gateway upstream")]) as policy:
        body = await run_through_server(rollout_server, policy, "srv-502")
    assert body["status"] == "failure"
    assert body["err_category"] == "http_error"
    assert "HTTP 502" in body["err_message"]
    assert "bad gateway upstream" in body["err_message"]
