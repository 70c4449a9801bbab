"""Resolving ``"module.path:attr"`` strings and copying configs for a fresh workflow instance."""

from __future__ import annotations

import copy
import importlib
import logging
from typing import Any

logger = logging.getLogger(__name__)


def load_object(path: str) -> Any:
    """Import ``"package.module:attr"`` (``attr`` may be dotted, e.g. ``"mod:Outer.Inner"``)."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(
            f"Invalid import path {path!r}: expected 'module:attr' format, "
            "e.g. 'my_rollout.workflow:MyWorkflow'"
        )
    module = importlib.import_module(module_name)
    value: Any = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ImportError(
                f"Invalid import path {path!r}: module {module_name!r} has no attribute {attr!r}"
            ) from None
    return value


def resolve(value: Any) -> Any:
    return load_object(value) if isinstance(value, str) else value


class ConfigCopier:
    """Gives every rollout its own deep copy of a config.

    Configs may hold objects that cannot be deep-copied (a model client with a lock, an open
    tool session). For those, the copy shares that one field with the original instead of
    failing every rollout; which fields are shared is worked out once and logged once.
    """

    def __init__(self, config: Any) -> None:
        self._config = config
        self._shared: frozenset[str] | None = None

    def copy(self) -> Any:
        config = self._config
        if config is None:
            return None
        if self._shared is None:
            try:
                return copy.deepcopy(config)
            except Exception:
                self._shared = self._uncopyable_fields(config)
                logger.warning(
                    "workflow_config fields %s cannot be deep-copied; every rollout shares "
                    "these objects (make them safe for concurrent use, or create them in run())",
                    ", ".join(sorted(self._shared)) or "(none)",
                )
        return self._partial_copy(config, self._shared)

    @staticmethod
    def _field_maps(config: Any) -> list[dict[str, Any]]:
        maps = [config.__dict__]
        extra = getattr(config, "__pydantic_extra__", None)
        if isinstance(extra, dict):
            maps.append(extra)
        return maps

    def _uncopyable_fields(self, config: Any) -> frozenset[str]:
        shared: set[str] = set()
        for fields in self._field_maps(config):
            for name, value in fields.items():
                try:
                    copy.deepcopy(value)
                except Exception:
                    shared.add(name)
        return frozenset(shared)

    def _partial_copy(self, config: Any, shared: frozenset[str]) -> Any:
        clone = copy.copy(config)
        for fields in self._field_maps(clone):
            for name, value in fields.items():
                if name not in shared:
                    fields[name] = copy.deepcopy(value)
        return clone
