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

logger = logging.getLogger(__name__)

_UNSET_TRAJECTORY = object()


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
            data["trajectory_messages"] = copy.deepcopy(list(data.get("messages") or []))
        return data

    def json_safe_copy(self) -> RolloutSample:
        """Return a copy whose ``metrics`` and ``extra_fields`` survive ``json.dumps``.

        numpy-like scalars become ``int``/``float``; non-finite numbers, values that cannot be
        encoded and non-string keys are dropped with one warning naming them.
        """
        dropped: list[str] = []
        metrics = _json_safe_mapping(self.metrics, "metrics", dropped)
        extra = _json_safe_mapping(self.extra_fields, "extra_fields", dropped)
        if dropped:
            logger.warning(
                "dropped values that are not JSON-safe from the sample: %s", ", ".join(dropped)
            )
        return self.model_copy(update={"metrics": metrics, "extra_fields": extra})


def _json_safe_mapping(values: Mapping[Any, Any], where: str, dropped: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            dropped.append(f"{where}[{key!r}]")
            continue
        ok, safe = _json_safe_value(value)
        if ok:
            out[key] = safe
        else:
            dropped.append(f"{where}.{key}")
    return out


def _json_safe_value(value: Any) -> tuple[bool, Any]:
    if value is None or isinstance(value, (str, bool)):
        return True, value
    if isinstance(value, numbers.Integral):
        return True, int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        return (True, f) if math.isfinite(f) else (False, None)
    if isinstance(value, Mapping):
        inner: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                return False, None
            ok, safe = _json_safe_value(v)
            if not ok:
                return False, None
            inner[k] = safe
        return True, inner
    if isinstance(value, (list, tuple)):
        items = []
        for v in value:
            ok, safe = _json_safe_value(v)
            if not ok:
                return False, None
            items.append(safe)
        return True, items
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False, None
    return True, value
