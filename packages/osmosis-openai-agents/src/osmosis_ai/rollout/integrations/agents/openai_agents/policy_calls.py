"""What the rollout remembers about each policy call.

The OpenAI Agents SDK keeps the conversation (Responses-API items) but drops what the trainer's
trajectory needs per call: the token usage, the model that answered and the system instructions
the call was sent with (they are never stored in a session). :class:`OsmosisRolloutModel`
records one :class:`PolicyCall` per call into the rollout's session, which uses them to build
the sample.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PolicyCall:
    """One chat-completions request made for the rollout and what came back.

    ``position`` is the number of session items when the call started: the items the model saw
    (after its system instructions). ``call_ids`` and ``text`` identify the assistant message
    the call produced, so usage can be attached to the right message even after items were
    popped or when the session holds assistant messages that no policy call produced.
    """

    position: int
    instructions: str | None
    model: str
    usage: dict[str, int] | None
    call_ids: tuple[str, ...]
    text: str | None


def usage_dict(usage: Any) -> dict[str, int] | None:
    """Chat-completions token counts from an SDK ``Usage`` or a Responses ``ResponseUsage``.

    ``None`` when the server reported nothing (all zero): a trajectory must not claim that a
    call consumed zero tokens.
    """
    if usage is None:
        return None
    prompt = int(getattr(usage, "input_tokens", 0) or 0)
    completion = int(getattr(usage, "output_tokens", 0) or 0)
    total = int(getattr(usage, "total_tokens", 0) or 0) or prompt + completion
    if not (prompt or completion or total):
        return None
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def describe_output(
    output: Iterable[Any], requested_model: str
) -> tuple[tuple[str, ...], str | None, str]:
    """``(tool call ids, assistant text, model name)`` of a response's output items.

    The model name is the one the server reported when the SDK kept it (streaming keeps the
    chunk's ``model``), else the one requested.
    """
    call_ids: list[str] = []
    texts: list[str] = []
    model = requested_model
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "function_call":
            call_id = getattr(item, "call_id", None)
            if isinstance(call_id, str):
                call_ids.append(call_id)
        elif kind == "message":
            for part in getattr(item, "content", None) or ():
                text = getattr(part, "text", None)
                if isinstance(text, str):
                    texts.append(text)
        provider_data = getattr(item, "provider_data", None)
        if isinstance(provider_data, dict):
            reported = provider_data.get("model")
            if isinstance(reported, str) and reported:
                model = reported
    return tuple(call_ids), ("".join(texts) if texts else None), model
