"""An ATIF trajectory read back as a chat transcript plus per-policy-call figures.

The rollout server writes ``trajectory.json`` in ATIF (steps with ``source`` system / user /
agent, agent steps carrying ``tool_calls`` and an ``observation`` with the tool results); the
eval controller adds the policy proxy's per-call records under ``extra.osmosis.llm_calls``.
Readers (``eval show --row``, the HTML report) want OpenAI-style messages and one line per
policy call, so both are derived here, once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from osmosis_ai.rollout.types.messages import content_text


class ToolCallView(TypedDict):
    id: str | None
    name: str
    arguments: str


class MessageView(TypedDict):
    role: str  # system | user | assistant | tool
    content: str
    tool_calls: NotRequired[list[ToolCallView]]
    tool_call_id: NotRequired[str | None]
    reasoning: NotRequired[str]


class CallView(TypedDict, total=False):
    index: int
    latency_ms: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    status_code: int | None
    attempts: int | None
    model: str | None


def text_of(content: Any) -> str:
    """Text of a message ``content``, non-text parts shown as their JSON."""
    return content_text(content, keep_non_text=True)


def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    return json.dumps(raw, ensure_ascii=False, default=str)


def _agent_messages(step: Mapping[str, Any]) -> list[MessageView]:
    message: MessageView = {"role": "assistant", "content": text_of(step.get("message"))}
    reasoning = step.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        message["reasoning"] = reasoning
    calls = step.get("tool_calls")
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [
            {
                "id": call.get("tool_call_id"),
                "name": str(call.get("function_name", "")),
                "arguments": _arguments(call.get("arguments")),
            }
            for call in calls
            if isinstance(call, Mapping)
        ]
    out = [message]
    for result in _tool_results(step):
        out.append(
            {
                "role": "tool",
                "content": text_of(result.get("content")),
                "tool_call_id": result.get("source_call_id"),
            }
        )
    return out


def _tool_results(step: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tool results an agent step's ``observation`` holds (each with ``source_call_id``
    and ``content``); none when the step has no well-formed observation."""
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, Mapping) else None
    return [r for r in results if isinstance(r, Mapping)] if isinstance(results, list) else []


def transcript_messages(document: Mapping[str, Any]) -> list[MessageView]:
    """The trajectory's steps as chat messages (tool results become ``tool`` messages)."""
    messages: list[MessageView] = []
    steps = document.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, Mapping):
            continue
        source = step.get("source")
        if source == "agent":
            messages.extend(_agent_messages(step))
        elif source in ("system", "user"):
            messages.append({"role": str(source), "content": text_of(step.get("message"))})
    return messages


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def policy_calls(document: Mapping[str, Any]) -> list[CallView]:
    """One entry per policy call: the proxy's records when present, else the agent steps'."""
    extra = document.get("extra")
    osmosis = extra.get("osmosis") if isinstance(extra, Mapping) else None
    records = osmosis.get("llm_calls") if isinstance(osmosis, Mapping) else None
    calls: list[CallView] = []
    if isinstance(records, list) and records:
        for index, call in enumerate(r for r in records if isinstance(r, Mapping)):
            usage = call.get("usage") if isinstance(call.get("usage"), Mapping) else {}
            assert isinstance(usage, Mapping)
            calls.append(
                {
                    "index": index,
                    "latency_ms": _num(call.get("latency_ms")),
                    "prompt_tokens": _int(usage.get("prompt_tokens")),
                    "completion_tokens": _int(usage.get("completion_tokens")),
                    "finish_reason": call.get("finish_reason"),
                    "status_code": _int(call.get("status_code")),
                    "attempts": _int(call.get("attempts")),
                    "model": call.get("model"),
                }
            )
        return calls
    steps = document.get("steps")
    agent_steps = [s for s in (steps if isinstance(steps, list) else []) if isinstance(s, Mapping)]
    for step in (s for s in agent_steps if s.get("source") == "agent"):
        metrics = step.get("metrics") if isinstance(step.get("metrics"), Mapping) else {}
        assert isinstance(metrics, Mapping)
        calls.append(
            {
                "index": len(calls),
                "latency_ms": _num(metrics.get("latency_ms")),
                "prompt_tokens": _int(metrics.get("prompt_tokens")),
                "completion_tokens": _int(metrics.get("completion_tokens")),
                "finish_reason": None,
                "model": step.get("model_name"),
            }
        )
    return calls


def first_user_text(messages: list[MessageView]) -> str | None:
    return next((m.get("content", "") for m in messages if m.get("role") == "user"), None)


def final_answer(messages: list[MessageView]) -> str | None:
    """The last assistant message with text (the answer a grader usually reads)."""
    for message in reversed(messages):
        if message.get("role") == "assistant" and message.get("content"):
            return message.get("content")
    return None


def format_transcript(messages: list[MessageView], calls: list[CallView]) -> str:
    """A plain-text transcript for terminals (``osmosis eval show --row``)."""
    lines: list[str] = []
    call_index = 0
    for message in messages:
        role = message.get("role", "?")
        header = f"── {role}"
        if role == "assistant" and call_index < len(calls):
            call = calls[call_index]
            call_index += 1
            latency, finish = call.get("latency_ms"), call.get("finish_reason")
            figures = [
                f"{latency:.0f} ms" if latency is not None else None,
                (
                    f"{call.get('prompt_tokens')}+{call.get('completion_tokens')} tokens"
                    if call.get("prompt_tokens") is not None
                    else None
                ),
                f"finish={finish}" if finish else None,
            ]
            shown = [f for f in figures if f]
            if shown:
                header += f" (call {call_index}: {', '.join(shown)})"
        if role == "tool" and message.get("tool_call_id"):
            header += f" [{message.get('tool_call_id')}]"
        lines.append(header)
        if message.get("reasoning"):
            lines.append(f"  (reasoning) {message.get('reasoning')}")
        if message.get("content"):
            lines.extend(f"  {line}" for line in str(message.get("content")).splitlines())
        for tool_call in message.get("tool_calls", []):
            lines.append(f"  → tool call {tool_call['name']}({tool_call['arguments']})")
    return "\n".join(lines)


def sample_messages(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chat-completions messages an ATIF trajectory was written from (its steps read back:
    agent steps become assistant messages with ``tool_calls``, their observations ``tool``
    messages)."""
    messages: list[dict[str, Any]] = []
    steps = document.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, Mapping):
            continue
        source = step.get("source")
        if source in ("system", "user"):
            role = (
                step.get("extra", {}).get("role") if isinstance(step.get("extra"), dict) else None
            )
            messages.append({"role": role or source, "content": step.get("message")})
            continue
        if source != "agent":
            continue
        message: dict[str, Any] = {"role": "assistant", "content": step.get("message")}
        if step.get("reasoning_content"):
            message["reasoning_content"] = step["reasoning_content"]
        calls = step.get("tool_calls")
        if isinstance(calls, list) and calls:
            message["tool_calls"] = [
                {
                    "id": call.get("tool_call_id"),
                    "type": "function",
                    "function": {
                        "name": call.get("function_name"),
                        "arguments": call.get("arguments")
                        if isinstance(call.get("arguments"), str)
                        else json.dumps(call.get("arguments"), ensure_ascii=False),
                    },
                }
                for call in calls
                if isinstance(call, Mapping)
            ]
        messages.append(message)
        for result in _tool_results(step):
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": result.get("source_call_id"),
                    "content": result.get("content"),
                }
            )
    return messages
