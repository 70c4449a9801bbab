"""``RolloutSample``: the one conversation a rollout produced, and its reward."""

from __future__ import annotations

import copy
import json
import logging
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from osmosis_ai._util.model_slots import fill_model

logger = logging.getLogger(__name__)


class RolloutSample(BaseModel):
    """One rollout's sample.

    ``messages`` is the framework-native history that graders read. ``trajectory_messages`` is
    the chat-completions form saved in the trajectory; it defaults to a copy of ``messages`` and
    an explicit ``None`` disables trajectory saving. ``reward`` is ``None`` until graded and must
    be finite: a NaN reward would silently poison a training batch, so it is rejected on
    construction and on assignment.
    """

    model_config = ConfigDict(
        allow_inf_nan=False,
        validate_assignment=True,
        arbitrary_types_allowed=True,
    )

    messages: Sequence[Mapping[str, Any]] = Field(default_factory=list)
    trajectory_messages: Sequence[Mapping[str, Any]] | None = None
    label: str | None = None
    reward: float | None = None
    remove_sample: bool = False
    metrics: dict[str, Any] = Field(default_factory=dict)
    extra_fields: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _default_trajectory(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "trajectory_messages" not in data:
            data = dict(data)
            data["trajectory_messages"] = _copied(data.get("messages") or [])
        return data

    @classmethod
    def _from_output(
        cls, messages: list[dict[str, Any]], label: str | None, metrics: dict[str, float]
    ) -> RolloutSample:
        """``RolloutSample(messages=messages, label=label, metrics=metrics)`` for values an
        ``AgentWorkflowOutput`` has just validated (a list of ``str``-keyed dicts, finite
        float metrics, that no other code holds), built without validating them a second time:
        validation would only make another shallow copy of each (about 8 -> 4 µs for a
        three-message rollout). ``trajectory_messages`` is the same deep copy the
        constructor makes. The result equals the constructed one, fields set included.
        """
        sample = object.__new__(cls)
        fill_model(
            sample,
            {
                "messages": messages,
                "trajectory_messages": _copied(messages),
                "label": label,
                "reward": None,
                "remove_sample": False,
                "metrics": dict(metrics),
                "extra_fields": {},
            },
            {"messages", "trajectory_messages", "label", "metrics"},
        )
        return sample

    def json_safe_copy(self) -> RolloutSample:
        """This sample with ``metrics`` and ``extra_fields`` made strict-JSON encodable.

        Returns the sample itself when nothing needs changing (the common case). Otherwise a
        copy in which, at any depth: non-string keys become strings (as ``json.dumps`` spells
        them; a key it refuses, such as a tuple or frozenset, drops its entry), numpy-like scalars and arrays become ``int``/``float``/lists, and only the
        values that cannot be encoded (NaN, infinities, arbitrary objects, structures nested
        deeper than 100 levels or circular) are dropped, each named in one warning. The rest
        of a nested structure is kept: ``{"nested": {"ok": 1.0, "bad": nan}}`` becomes
        ``{"nested": {"ok": 1.0}}``.
        """
        dropped: list[str] = []
        metrics = _clean(self.metrics, "metrics", dropped, 0)
        extra = _clean(self.extra_fields, "extra_fields", dropped, 0)
        if dropped:
            logger.warning(
                "dropped values that are not JSON-safe from the sample: %s", ", ".join(dropped)
            )
        if metrics is self.metrics and extra is self.extra_fields:
            return self
        return self.model_copy(update={"metrics": metrics, "extra_fields": extra})


def _copied(messages: Sequence[Any]) -> list[Any]:
    """A deep copy of ``messages``. JSON-shaped messages (builtin dicts with string keys,
    lists, scalars: what the wire and most agents produce) are copied without
    ``copy.deepcopy``'s per-object bookkeeping; anything else goes through ``deepcopy``."""
    try:
        return [_copy_json(message) for message in messages]
    except (_NotJson, RecursionError):  # RecursionError: a cycle, which deepcopy handles
        return copy.deepcopy(list(messages))


class _NotJson(Exception):
    pass


def _copy_json(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotJson
            out[key] = _copy_json(item)
        return out
    if kind is list:
        return [_copy_json(item) for item in value]
    raise _NotJson


_DROP: Any = object()
_MAX_DEPTH = 100


def _clean(value: Any, path: str, dropped: list[str], depth: int) -> Any:
    """``value`` itself when it is strict-JSON safe, else a safe copy, else ``_DROP``."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
    elif depth >= _MAX_DEPTH:
        pass
    elif kind is dict or isinstance(value, Mapping):
        return _clean_mapping(value, path, dropped, depth + 1)
    elif kind is list or kind is tuple or isinstance(value, (list, tuple)):
        return _clean_sequence(value, path, dropped, depth + 1)
    else:
        converted = _convert(value)
        if converted is not _DROP:
            cleaned = _clean(converted, path, dropped, depth + 1)
            return converted if cleaned is converted else cleaned
    dropped.append(path)
    return _DROP


def _clean_mapping(value: Mapping[Any, Any], path: str, dropped: list[str], depth: int) -> Any:
    out: dict[str, Any] | None = None if type(value) is dict else {}
    for index, (key, item) in enumerate(value.items()):
        text = key if type(key) is str else _key_text(key)
        if text is None:  # a key JSON has no spelling for (tuple, frozenset, object): dropped
            dropped.append(f"{path}[{type(key).__name__} key]")
            cleaned: Any = _DROP
        else:
            cleaned = _clean(item, f"{path}.{text}", dropped, depth)
        if out is None and (cleaned is not item or text is not key):
            out = dict(list(value.items())[:index])  # the unchanged prefix (its keys are str)
        if out is not None and cleaned is not _DROP and text is not None:
            out[text] = cleaned
    return value if out is None else out


def _clean_sequence(value: Sequence[Any], path: str, dropped: list[str], depth: int) -> Any:
    out: list[Any] | None = None if type(value) in (list, tuple) else []
    for index, item in enumerate(value):
        cleaned = _clean(item, f"{path}[{index}]", dropped, depth)
        if out is None and cleaned is not item:
            out = list(value[:index])
        if out is not None and cleaned is not _DROP:
            out.append(cleaned)
    return value if out is None else out


def _key_text(key: Any) -> str | None:
    """A non-string key as ``json.dumps`` writes it (``1`` -> ``"1"``, ``True`` -> ``"true"``);
    ``None`` for a key ``json.dumps`` refuses (a tuple, a frozenset, any other object): the
    entry is dropped, as in osmosis-ai 0.3.8, never keyed by its ``str()``."""
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    if isinstance(key, str):  # a str subclass (an enum member, say)
        return str(key)
    if isinstance(key, numbers.Integral):  # numpy integers
        return json.dumps(int(key))
    if isinstance(key, numbers.Real):
        return json.dumps(float(key))
    return None


def _convert(value: Any) -> Any:
    """The builtin equivalent of a numpy-like scalar or array or of an int/float/str subclass
    (such as an enum member); ``_DROP`` for anything else (JSON has no encoding for it)."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        return str(value)
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        try:
            return tolist()
        except Exception:
            return _DROP
    return _DROP


#: osmosis-ai 0.3.8's name for one message of a sample.
SampleMessage = Mapping[str, Any]

# 0.3.8 defined these in this module; they live in their own modules now and are re-exported
# here on first use (importing them at the top would be circular: they import this module).
_MOVED = {
    "MessageDict": "osmosis_ai.rollout.types.messages",
    "RolloutStatus": "osmosis_ai.rollout.types.enums",
    "RolloutErrorCategory": "osmosis_ai.rollout.types.enums",
    "ExecutionRequest": "osmosis_ai.rollout.types.execution",
    "ExecutionResult": "osmosis_ai.rollout.types.execution",
    "ExecutionOutcome": "osmosis_ai.rollout.types.execution",
}


def __getattr__(name: str) -> Any:
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
