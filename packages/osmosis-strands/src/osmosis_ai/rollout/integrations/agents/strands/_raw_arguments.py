"""Tool-call arguments sent back exactly as the policy wrote them (training safety).

Strands parses a tool call's ``arguments`` string into a dict (``toolUse.input``) and, on the next
request, renders it again with ``json.dumps``: the policy's compact ``{"a":2,"b":3}`` comes back
as ``{"a": 2, "b": 3}``. The conversation the policy is asked to continue is then not the one it
produced, which breaks token-in/token-out training (``tool_args_reformatted``, see
``docs/guides/training-safe-rollouts.md``).

:class:`RawToolArguments` remembers, per rollout, each tool call's raw argument string by
tool-call id (read from the responses as they pass through the observed client) and puts it back
into later requests. It only restores a string whose JSON value equals what Strands rendered, so a
workflow that deliberately changed a tool call's input still sends its change.
"""

from __future__ import annotations

import weakref
from typing import Any

from osmosis_ai.rollout.integrations.spi import RolloutContext, restore_tool_arguments

#: id(RolloutContext) -> its store; an entry is removed when its context is garbage collected.
_STORES: dict[int, RawToolArguments] = {}


def raw_arguments_for(ctx: RolloutContext) -> RawToolArguments:
    """The one store of ``ctx``'s rollout (created on first use)."""
    key = id(ctx)
    store = _STORES.get(key)
    if store is None:
        store = _STORES[key] = RawToolArguments()
        weakref.finalize(ctx, _STORES.pop, key, None)
    return store


class StreamedCalls:
    """One streamed response's tool calls, assembled from the deltas of choice 0."""

    __slots__ = ("ids", "parts")

    def __init__(self) -> None:
        self.ids: dict[int, str] = {}
        self.parts: dict[int, list[str]] = {}

    def add_chunk(self, chunk: Any) -> None:
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) == 0:
                self._add(getattr(choice, "delta", None))

    def _add(self, delta: Any) -> None:
        for position, call in enumerate(getattr(delta, "tool_calls", None) or []):
            index = getattr(call, "index", None)
            index = position if not isinstance(index, int) else index
            call_id = getattr(call, "id", None)
            if isinstance(call_id, str) and call_id:
                self.ids.setdefault(index, call_id)
            fragment = getattr(getattr(call, "function", None), "arguments", None)
            if isinstance(fragment, str) and fragment:
                self.parts.setdefault(index, []).append(fragment)

    def items(self) -> list[tuple[str, str]]:
        return [(i, "".join(self.parts.get(n, ()))) for n, i in self.ids.items()]


class RawToolArguments:
    """Raw argument strings by tool-call id, for one rollout."""

    __slots__ = ("_by_id", "_open")

    def __init__(self) -> None:
        self._by_id: dict[str, str] = {}
        self._open: list[StreamedCalls] = []

    def observe_completion(self, completion: Any) -> None:
        """Remember the tool calls of a non-streamed ``ChatCompletion``."""
        choices = getattr(completion, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        for call in getattr(message, "tool_calls", None) or []:
            call_id = getattr(call, "id", None)
            arguments = getattr(getattr(call, "function", None), "arguments", None)
            if isinstance(call_id, str) and isinstance(arguments, str):
                self._by_id[call_id] = arguments

    def stream_collector(self) -> StreamedCalls:
        """A collector for one streamed response; read when the next request is restored."""
        collector = StreamedCalls()
        self._open.append(collector)
        return collector

    def _flush(self) -> None:
        for collector in self._open:
            self._by_id.update(collector.items())
        self._open.clear()

    def restore(self, messages: Any) -> None:
        """Put the raw argument strings back into ``messages`` (chat-completions form), in place."""
        if not isinstance(messages, list):
            return
        self._flush()
        restore_tool_arguments(messages, self._by_id)


def restore_in(messages: list[Any], store: RawToolArguments | None) -> list[Any]:
    """``messages`` with raw arguments restored (no-op without a store)."""
    if store is not None:
        store.restore(messages)
    return messages


__all__ = ["RawToolArguments", "raw_arguments_for", "restore_in"]
