"""Rendering a :class:`Reply` in the exact OpenAI chat-completions shapes.

Non-streaming: one ``chat.completion`` object. Streaming: ``chat.completion.chunk`` objects as
Server-Sent Events — a role chunk, reasoning (``reasoning_content``), content pieces, tool-call deltas (``index``, ``id``,
``type``, ``function.name`` first, then ``function.arguments`` in pieces the client must
concatenate), a final chunk carrying ``finish_reason``, a usage chunk (``choices: []``) when the
request set ``stream_options.include_usage``, then ``data: [DONE]``. With ``return_token_ids`` (vLLM's field) the response carries
``prompt_token_ids`` and the choice ``token_ids`` (streaming: prompt ids on the first chunk, all
completion ids on the final one) from :mod:`osmosis_ai.testing.tokens`. Clients that parse either
shape correctly against this server parse OpenAI's.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

from osmosis_ai.testing import tokens
from osmosis_ai.testing.replies import Reply
from osmosis_ai.testing.responders import message_text

_ids = itertools.count(1)
#: The scripted policy's ``system_fingerprint`` (constant: the "backend" never changes).
SYSTEM_FINGERPRINT = "fp_osmosis_scripted"
_WORD = re.compile(r"\S+\s*|\s+")


def _estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def compute_usage(body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    """Deterministic token counts (about 4 characters per token), or the reply's override."""
    if reply.usage is not None:
        usage = dict(reply.usage)
        usage.setdefault(
            "total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        )
        return usage
    messages = body.get("messages")
    prompt = 0
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, Mapping):
                prompt += 3 + _estimate_tokens(message_text(message))
    completion = _estimate_tokens(reply.content or "")
    for call in reply.tool_calls:
        completion += _estimate_tokens(call.name) + _estimate_tokens(call.arguments_json())
    completion = max(completion, 1)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _tool_call_ids(reply: Reply, completion_id: str) -> list[str]:
    return [
        call.id or f"call_{completion_id.removeprefix('chatcmpl-')}_{i}"
        for i, call in enumerate(reply.tool_calls)
    ]


def _logprobs(content: str | None) -> dict[str, Any]:
    tokens = _WORD.findall(content or "")
    return {
        "content": [
            {"token": t, "logprob": -0.01, "bytes": list(t.encode()), "top_logprobs": []}
            for t in tokens
        ],
        "refusal": None,
    }


def new_completion_id() -> str:
    return f"chatcmpl-{next(_ids):08x}"


def completion_object(
    body: Mapping[str, Any], reply: Reply, *, model: str, completion_id: str
) -> dict[str, Any]:
    """The ``chat.completion`` object for a non-streaming request."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        ids = _tool_call_ids(reply, completion_id)
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for call_id, call in zip(ids, reply.tool_calls, strict=True)
        ]
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "logprobs": _logprobs(reply.content) if body.get("logprobs") else None,
        "finish_reason": reply.resolved_finish_reason,
    }
    result: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or model,
        "choices": [choice],
        "usage": compute_usage(body, reply),
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }
    if body.get("return_token_ids"):
        result["prompt_token_ids"] = tokens.prompt_token_ids(body.get("messages"))
        choice["token_ids"] = tokens.completion_token_ids(message)
    return result


def _sse(payload: Mapping[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def stream_events(
    body: Mapping[str, Any], reply: Reply, *, model: str, completion_id: str
) -> Iterator[bytes]:
    """The SSE byte frames of a streaming response, ending with ``data: [DONE]``."""
    options = body.get("stream_options")
    include_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
    created = int(time.time())
    model_name = reply.model or model
    want_logprobs = bool(body.get("logprobs"))
    want_ids = bool(body.get("return_token_ids"))

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> bytes:
        payload: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model_name,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [
                {
                    "index": 0,
                    "delta": delta,
                    "logprobs": extra.get("logprobs"),
                    "finish_reason": finish_reason,
                }
            ],
        }
        if want_ids and "token_ids" in extra:
            payload["choices"][0]["token_ids"] = extra["token_ids"]
        if want_ids and "prompt_token_ids" in extra:
            payload["prompt_token_ids"] = extra["prompt_token_ids"]
        if include_usage:
            payload["usage"] = None
        return _sse(payload)

    yield chunk(
        {"role": "assistant", "content": ""},
        prompt_token_ids=tokens.prompt_token_ids(body.get("messages")),
    )
    if reply.reasoning:
        yield chunk({"reasoning_content": reply.reasoning})
    for piece in _WORD.findall(reply.content or ""):
        yield chunk({"content": piece}, logprobs=_logprobs(piece) if want_logprobs else None)
    for index, (call_id, call) in enumerate(
        zip(_tool_call_ids(reply, completion_id), reply.tool_calls, strict=True)
    ):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        arguments = call.arguments_json()
        half = (len(arguments) + 1) // 2
        for part in (arguments[:half], arguments[half:]):
            if part:
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    final = completion_object(body, reply, model=model, completion_id=completion_id)
    message = final["choices"][0]["message"]
    yield chunk({}, reply.resolved_finish_reason, token_ids=tokens.completion_token_ids(message))
    if include_usage:
        yield _sse(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model_name,
                "choices": [],
                "usage": compute_usage(body, reply),
            }
        )
    yield b"data: [DONE]\n\n"
