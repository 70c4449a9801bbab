"""The scripted policy's deterministic tokenisation (``return_token_ids``), for offline tests.

A request that sets ``return_token_ids: true`` (vLLM's field) gets ``prompt_token_ids`` on the
response (top level, as vLLM) and ``token_ids`` on the choice. The "chat template" is plain
text, and a token is one UTF-8 byte (ids 0-255)::

    message  = "<|" role [":" tool_call_id] "|>" body "<|end|>"
    body     = ["<think>" reasoning "</think>"] content {"<tool_call>" id " " name " " arguments "</tool_call>"}
    prompt   = message* "<|assistant|>"
    completion = body(response) "<|end|>"

The template is append-only by construction: when a request's messages are the previous
request's messages + the previous response (byte for byte), its prompt ids start with the
previous prompt ids + completion ids. Any re-rendering of an earlier turn changes the ids from
the first changed byte on, which is what the token-level training-safety check looks for.
Content given as a list of parts renders as the concatenation of its text parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, Mapping))
    return ""


def render_body(message: Mapping[str, Any]) -> str:
    """The rendered body of one message (reasoning, content, tool calls)."""
    parts: list[str] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(f"<think>{reasoning}</think>")
    parts.append(_text(message.get("content")))
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping):
            function = call.get("function") or {}
            parts.append(
                f"<tool_call>{call.get('id')} {function.get('name')} "
                f"{function.get('arguments')}</tool_call>"
            )
    return "".join(parts)


def render_prompt(messages: Sequence[Any]) -> str:
    """The rendered prompt: every message, then the assistant generation header."""
    out: list[str] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        header = str(message.get("role"))
        if message.get("tool_call_id"):
            header += f":{message['tool_call_id']}"
        out.append(f"<|{header}|>{render_body(message)}<|end|>")
    out.append("<|assistant|>")
    return "".join(out)


def token_ids(text: str) -> list[int]:
    """One id per UTF-8 byte."""
    return list(text.encode("utf-8"))


def prompt_token_ids(messages: Any) -> list[int]:
    return token_ids(render_prompt(messages if isinstance(messages, list) else []))


def completion_token_ids(message: Mapping[str, Any]) -> list[int]:
    return token_ids(render_body(message) + "<|end|>")


__all__ = [
    "completion_token_ids",
    "prompt_token_ids",
    "render_body",
    "render_prompt",
    "token_ids",
]
