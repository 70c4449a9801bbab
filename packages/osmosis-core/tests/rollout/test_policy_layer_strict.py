"""Every call through core's policy clients is shaped for strict servers (llama.cpp's server
answers HTTP 500 to an assistant ``content`` that is a list or ``null`` beside tool calls)."""

from __future__ import annotations

import asyncio
from typing import Any

from osmosis_ai.rollout.policy import policy_client, strict_chat_messages, sync_policy_client
from osmosis_ai.testing import ScriptedPolicyServer

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
SENT: list[dict[str, Any]] = [
    {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "1"},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}],
    },
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]},
]
EXPECTED: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief"},
    # two text parts of a user message stay parts: only assistants are joined
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "1"},
    {"role": "assistant", "content": "xy"},
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]},
]


def test_strict_chat_messages_shapes_only_what_strict_servers_reject() -> None:
    assert strict_chat_messages(SENT) == EXPECTED
    plain = [{"role": "user", "content": "hi"}]
    assert strict_chat_messages(plain) is plain  # nothing to change: the same list


async def test_the_async_and_sync_policy_clients_send_the_strict_shape() -> None:
    async with ScriptedPolicyServer(["ok", "ok"]) as policy:
        url = policy.chat_completions_url("r")
        await policy_client(url, "k").chat.completions.create(model="m", messages=SENT)  # type: ignore[arg-type]

        def blocking() -> None:  # off the loop: the server answers on it
            with sync_policy_client(url, "k") as client:
                client.chat.completions.create(model="m", messages=SENT)  # type: ignore[arg-type]

        await asyncio.to_thread(blocking)
        sent = [r.body["messages"] for r in policy.requests_for("r")]
    assert sent == [EXPECTED, EXPECTED]
