"""What the proxy records for the training-safety check: messages, response, ids, fingerprint."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from osmosis_ai.eval import check_append_only
from osmosis_ai.eval._impl.proxy.policy_proxy import PolicyProxy
from osmosis_ai.eval._impl.proxy.upstream import Upstream
from osmosis_ai.testing import Reply, ScriptedPolicyServer, ToolCall
from osmosis_ai.testing.completions import SYSTEM_FINGERPRINT
from osmosis_ai.testing.tokens import completion_token_ids, prompt_token_ids

TURNS = [
    Reply(
        reasoning="use the tool",
        tool_calls=(ToolCall("multiply", {"a": 2, "b": 3}, id="call_1"),),
    ),
    Reply(content="#### 6"),
]
USER: dict[str, object] = {"role": "user", "content": "What is 2 times 3?"}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


async def _two_turns(
    http: httpx.AsyncClient, url: str, token: str, *, stream: bool
) -> list[dict[str, object]]:
    """A faithful two-call conversation; returns the assistant messages as the client parsed them."""
    headers = {"Authorization": f"Bearer {token}"}
    messages: list[dict[str, object]] = [USER]
    first = await http.post(
        f"{url}/chat/completions",
        json={"messages": messages, "stream": stream},
        headers=headers,
    )
    assert first.status_code == 200
    if stream:
        response = {
            "role": "assistant",
            "content": None,
            "reasoning_content": "use the tool",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "multiply", "arguments": '{"a":2,"b":3}'},
                }
            ],
        }
    else:
        response = first.json()["choices"][0]["message"]
    messages = [*messages, response, {"role": "tool", "tool_call_id": "call_1", "content": "6"}]
    second = await http.post(
        f"{url}/chat/completions", json={"messages": messages, "stream": stream}, headers=headers
    )
    assert second.status_code == 200
    return messages


@pytest.mark.parametrize("stream", [False, True])
async def test_records_messages_response_and_token_ids_on_opt_in(
    http: httpx.AsyncClient, stream: bool
) -> None:
    async with ScriptedPolicyServer(TURNS) as policy:
        upstream = Upstream(model="m", base_url=policy.url)
        async with PolicyProxy(upstream, token_ids=True) as proxy:
            url, token = proxy.register("r")
            messages = await _two_turns(http, url, token, stream=stream)
            calls = proxy.unregister("r")
        assert all(r.body["return_token_ids"] is True for r in policy.requests)
    first, second = calls
    assert first.messages == [USER]
    assert first.response is not None
    assert first.response["reasoning_content"] == "use the tool"
    assert first.response["tool_calls"][0]["function"] == {
        "name": "multiply",
        "arguments": '{"a":2,"b":3}',
    }
    assert (first.finish_reason, second.finish_reason) == ("tool_calls", "stop")
    assert first.system_fingerprint == SYSTEM_FINGERPRINT
    assert second.messages == messages
    assert first.prompt_token_ids == prompt_token_ids([USER])
    assert first.completion_token_ids == completion_token_ids(first.response)
    verdict = check_append_only(calls)
    assert verdict.append_only
    assert verdict.token_ids == "all"


async def test_token_ids_are_never_asked_for_without_opt_in(http: httpx.AsyncClient) -> None:
    async with ScriptedPolicyServer(TURNS) as policy:
        async with PolicyProxy(Upstream(model="m", base_url=policy.url)) as proxy:
            url, token = proxy.register("r")
            await _two_turns(http, url, token, stream=False)
            calls = proxy.unregister("r")
        assert all("return_token_ids" not in r.body for r in policy.requests)
    assert calls[0].prompt_token_ids is None
    assert check_append_only(calls).token_ids == "none"


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "multiply",
            "description": "Multiply two integers.",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
        },
    }
]


async def test_llm_calls_jsonl_keeps_the_requests_tools(http: httpx.AsyncClient) -> None:
    """The tools the policy was offered are part of what it saw: written once per run of equal
    tools (``tools_as_previous``) and restored by ``expand_calls``."""
    import io
    import json

    from osmosis_ai.eval._impl.proxy.calls import compact_calls, expand_calls

    async with (
        ScriptedPolicyServer(["a", "b", "c"]) as policy,
        PolicyProxy(Upstream(model="m", base_url=policy.url)) as proxy,
    ):
        url, token = proxy.register("r")
        headers = {"Authorization": f"Bearer {token}"}
        for tools in (TOOLS, TOOLS, None):
            body: dict[str, object] = {"messages": [USER]}
            if tools is not None:
                body["tools"] = tools
            response = await http.post(f"{url}/chat/completions", json=body, headers=headers)
            assert response.status_code == 200
        proxy.calls_file = written = io.StringIO()
        calls = proxy._routes["r"].calls  # what finish() writes, kept to compare
        await proxy.finish("r")
        lines = [json.loads(line) for line in written.getvalue().splitlines()]
    assert lines[0]["tools"] == TOOLS
    assert "tools" not in lines[1]
    assert lines[1]["tools_as_previous"] is True
    assert "tools" not in lines[2]
    assert "tools_as_previous" not in lines[2]
    restored = expand_calls(
        [{k: v for k, v in line.items() if k != "rollout_id"} for line in lines]
    )
    assert [c.get("tools") for c in restored] == [TOOLS, TOOLS, None]
    assert compact_calls(calls)[1] == {k: v for k, v in lines[1].items() if k != "rollout_id"}
