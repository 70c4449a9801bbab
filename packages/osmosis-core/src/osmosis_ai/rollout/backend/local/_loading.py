"""Resolving ``"module.path:attr"`` strings and copying configs for a fresh workflow instance."""

from __future__ import annotations

import copy
import importlib
import logging
from enum import Enum
from typing import Any

from pydantic import BaseModel

from osmosis_ai._util.model_slots import fill_model

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


_shared_types: tuple[type, ...] = ()


def share_in_config_copies(*types: type) -> None:
    """Declare instances of ``types`` safe to share between rollouts' config copies.

    LocalBackend gives each rollout ``deepcopy(workflow_config)``, like the reference SDK. For
    framework objects that hold no per-rollout state, such as Strands ``@tool`` objects,
    that copy is pure cost (about 50 µs per rollout for one Strands tool), so an integration
    may register their types here: every rollout's config then holds the very same instance
    (containers around it are still copied). Only registered types are affected; user objects
    keep full deep-copy isolation. Registration is process-wide and cannot be undone.
    """
    global _shared_types
    for kind in types:
        if not isinstance(kind, type):
            raise TypeError(f"share_in_config_copies takes classes; got {kind!r}")
        if kind not in _shared_types:
            _shared_types = (*_shared_types, kind)


def _find_shared(value: Any, found: dict[int, Any], depth: int = 0) -> None:
    """Collect instances of the registered types reachable through plain containers."""
    if depth > 8:
        return
    if isinstance(value, _shared_types):
        found[id(value)] = value
    elif isinstance(value, dict):
        for item in value.values():
            _find_shared(item, found, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _find_shared(item, found, depth + 1)


class ConfigCopier:
    """Gives every rollout its own deep copy of a config.

    Configs may hold objects that cannot be deep-copied (a model client with a lock, an open
    tool session). For those, the copy shares that one field with the original instead of
    failing every rollout; which fields are shared is worked out once and logged once.
    Instances of types registered with :func:`share_in_config_copies` (found in the config's
    fields and their dicts, lists, tuples and sets) are shared too: they seed the deep copy's
    memo, which is exactly how ``deepcopy`` keeps one copy of an object met twice.
    """

    def __init__(self, config: Any) -> None:
        self._config = config
        self._shared: frozenset[str] | None = None
        self._seed: dict[int, Any] = {}
        self._seed_types: tuple[type, ...] = ()
        self._plain = True  # the config held only plain data at the last copy

    def _memo(self) -> dict[int, Any] | None:
        if self._seed_types is not _shared_types:  # types registered since the last copy
            self._seed_types = _shared_types
            found: dict[int, Any] = {}
            if _shared_types:
                for fields in self._field_maps(self._config):
                    for value in fields.values():
                        _find_shared(value, found)
            self._seed = found
            self._plain = True  # try the plain copy again with the new shared objects
        return dict(self._seed) if self._seed else None

    def copy(self) -> Any:
        config = self._config
        if config is None:
            return None
        memo = self._memo()
        if self._plain:
            clone = _plain_copy(config, dict(memo) if memo else {})
            if clone is not _NOT_PLAIN:
                return clone
            self._plain = False  # other objects in it: copy.deepcopy from now on
        if self._shared is None:
            try:
                return copy.deepcopy(config, memo)
            except Exception:
                self._shared = self._uncopyable_fields(config)
                logger.warning(
                    "workflow_config fields %s cannot be deep-copied; every rollout shares "
                    "these objects (make them safe for concurrent use, or create them in run())",
                    ", ".join(sorted(self._shared)) or "(none)",
                )
                memo = self._memo()
        return self._partial_copy(config, self._shared, memo)

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
                    copy.deepcopy(value, self._memo())
                except Exception:
                    shared.add(name)
        return frozenset(shared)

    def _partial_copy(
        self, config: Any, shared: frozenset[str], memo: dict[int, Any] | None
    ) -> Any:
        clone = copy.copy(config)
        for fields in self._field_maps(clone):
            for name, value in fields.items():
                if name not in shared:
                    fields[name] = copy.deepcopy(value, memo)
        return clone


_NOT_PLAIN: Any = object()
_ATOMS = frozenset({str, int, float, bool, type(None), bytes, complex})


def _plain_copy(value: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy(value, memo)`` for plain data (atoms, lists, dicts, tuples, sets and
    pydantic models of them), several times faster; :data:`_NOT_PLAIN` for anything else.

    Objects in ``memo`` (the registered shared ones) are kept, as ``deepcopy`` keeps them, and
    an object met twice is copied once. A model class with its own ``__deepcopy__``, or a
    model with private attributes, is not plain (``deepcopy`` must run its code).
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    key = id(value)
    if key in memo:
        return memo[key]
    # Atoms inside a list or dict are kept without a call (most of a config's values).
    if kind is list:
        clone: Any = []
        memo[key] = clone
        for item in value:
            if type(item) not in _ATOMS:
                item = _plain_copy(item, memo)
                if item is _NOT_PLAIN:
                    return _NOT_PLAIN
            clone.append(item)
    elif kind is dict:
        clone = {}
        memo[key] = clone
        for name, item in value.items():
            if type(name) not in _ATOMS:
                return _NOT_PLAIN
            if type(item) not in _ATOMS:
                item = _plain_copy(item, memo)
                if item is _NOT_PLAIN:
                    return _NOT_PLAIN
            clone[name] = item
    elif kind is tuple or kind is frozenset or kind is set:
        items = [_plain_copy(item, memo) for item in value]
        if any(item is _NOT_PLAIN for item in items):
            return _NOT_PLAIN
        same = kind is not set and all(a is b for a, b in zip(items, value, strict=True))
        clone = value if same else kind(items)
    elif isinstance(value, BaseModel) and _plain_model(kind, value):
        clone = object.__new__(kind)  # as BaseModel.__deepcopy__ builds it
        memo[key] = clone
        fields = _plain_copy(value.__dict__, memo)
        extra = _plain_copy(value.__pydantic_extra__, memo)
        if fields is _NOT_PLAIN or extra is _NOT_PLAIN:
            return _NOT_PLAIN
        fill_model(clone, fields, set(value.__pydantic_fields_set__), extra)
    elif isinstance(value, Enum):
        return value  # as deepcopy: members are singletons
    else:
        return _NOT_PLAIN
    memo[key] = clone
    return clone


def _plain_model(kind: type, value: BaseModel) -> bool:
    return (
        kind.__deepcopy__ is BaseModel.__deepcopy__
        and kind.__new__ is object.__new__
        and getattr(value, "__pydantic_private__", None) is None
    )
