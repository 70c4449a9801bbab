"""Turn a rollout prompt (OpenAI chat messages) into Strands' native message form.

``ctx.prompt`` arrives in the chat-completions shape: string contents, a ``system`` message,
possibly assistant ``tool_calls`` and ``tool`` results. Strands accepts none of that as is: it
iterates a string content character by character (``TypeError: content_type=<W>``), ``system`` is
not a Strands role, and tool traffic lives in ``toolUse``/``toolResult`` content blocks. Rollout
authors pass ``messages=ctx.prompt`` straight through, so the conversion happens here, once, on a
copy (Strands stores and mutates the list it is given).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from osmosis_ai.rollout.integrations.spi import ConfigurationError

_SYSTEM_ROLES = frozenset({"system", "developer"})
# Keys of Strands content blocks that may appear in an already-native message.
_NATIVE_BLOCK_KEYS = frozenset(
    {
        "text",
        "image",
        "document",
        "video",
        "toolUse",
        "toolResult",
        "reasoningContent",
        "cachePoint",
        "guardContent",
        "citationsContent",
    }
)


class PromptConversionError(ConfigurationError):
    """A prompt message cannot be expressed as a Strands message (a ``ValueError``)."""


def split_prompt(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[list[str], list[dict[str, Any]]]:
    """Return ``(system_texts, strands_messages)`` for an OpenAI-style (or native) message list.

    System and developer messages are pulled out (Strands takes them as ``system_prompt``);
    consecutive ``tool`` messages become one user message of ``toolResult`` blocks.
    """
    system: list[str] = []
    converted: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise PromptConversionError(
                f"messages[{position}] is a {type(message).__name__}, expected a dict such as "
                '{"role": "user", "content": "..."}'
            )
        role = message.get("role")
        if role in _SYSTEM_ROLES:
            text = _text_of(message.get("content"), position)
            if text:
                system.append(text)
        elif role == "tool":
            block = _tool_result_block(message, position)
            previous = converted[-1] if converted else None
            if previous is not None and previous["role"] == "user" and _only_tool_results(previous):
                previous["content"].append(block)
            else:
                converted.append({"role": "user", "content": [block]})
        elif role in ("user", "assistant"):
            converted.append(_convert_message(message, role, position))
        else:
            raise PromptConversionError(
                f"messages[{position}] has role {role!r}; expected one of system, developer, "
                "user, assistant or tool"
            )
    return system, converted


def merge_system_prompt(explicit: Any, prompt_system: list[str]) -> Any:
    """Combine an explicit ``system_prompt=`` with the prompt's system messages (explicit first)."""
    if not prompt_system:
        return explicit
    if explicit is None or explicit == "":
        return "\n\n".join(prompt_system)
    if isinstance(explicit, str):
        return "\n\n".join([explicit, *prompt_system])
    if isinstance(explicit, list):  # a list of Strands SystemContentBlock
        return [*explicit, *({"text": text} for text in prompt_system)]
    raise PromptConversionError(
        f"system_prompt must be a string or a list of content blocks, got {type(explicit).__name__}"
    )


def _only_tool_results(message: Mapping[str, Any]) -> bool:
    return all(isinstance(b, Mapping) and "toolResult" in b for b in message["content"])


def _convert_message(message: Mapping[str, Any], role: str, position: int) -> dict[str, Any]:
    content = message.get("content")
    tool_calls = message.get("tool_calls") or []
    if _is_native(content) and not tool_calls:
        return copy.deepcopy(dict(message))
    blocks = _content_blocks(content, position)
    if role == "assistant":
        blocks.extend(_tool_use_block(call, position) for call in tool_calls)
    elif tool_calls:
        raise PromptConversionError(f"messages[{position}] is a user message with tool_calls")
    return {"role": role, "content": blocks}


def _is_native(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(
            isinstance(block, Mapping) and "type" not in block and set(block) & _NATIVE_BLOCK_KEYS
            for block in content
        )
    )


def _content_blocks(content: Any, position: int) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}]
    if not isinstance(content, list):
        raise PromptConversionError(
            f"messages[{position}].content is a {type(content).__name__}; expected a string or a "
            "list of content parts"
        )
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            blocks.append({"text": part})
        elif isinstance(part, Mapping) and part.get("type") == "text":
            blocks.append({"text": str(part.get("text", ""))})
        elif isinstance(part, Mapping) and "type" not in part and set(part) & _NATIVE_BLOCK_KEYS:
            blocks.append(copy.deepcopy(dict(part)))
        else:
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise PromptConversionError(
                f"messages[{position}] has a content part of type {kind!r} that cannot be "
                "converted to a Strands content block; use text parts, or pass Strands-native "
                'blocks such as {"image": {...}}'
            )
    return blocks


def _text_of(content: Any, position: int) -> str:
    return "\n".join(
        block["text"] for block in _content_blocks(content, position) if "text" in block
    )


def _tool_use_block(call: Any, position: int) -> dict[str, Any]:
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        raise PromptConversionError(
            f"messages[{position}].tool_calls holds {call!r}; expected "
            '{"id": ..., "type": "function", "function": {"name": ..., "arguments": "..."}}'
        )
    function = call["function"]
    arguments = function.get("arguments") or "{}"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise PromptConversionError(
                f"messages[{position}]: tool call {function.get('name')!r} has arguments that "
                f"are not JSON ({exc})"
            ) from exc
    return {
        "toolUse": {
            "toolUseId": str(call.get("id") or ""),
            "name": str(function.get("name") or ""),
            "input": arguments,
        }
    }


def _tool_result_block(message: Mapping[str, Any], position: int) -> dict[str, Any]:
    call_id = message.get("tool_call_id")
    if not call_id:
        raise PromptConversionError(f"messages[{position}] is a tool message without tool_call_id")
    text = _text_of(message.get("content"), position)
    return {
        "toolResult": {"toolUseId": str(call_id), "status": "success", "content": [{"text": text}]}
    }
