"""``fill_model``: give a pydantic model instance its state without validating it.

The one place that knows the four slots of a pydantic 2 model instance (``__dict__``,
``__pydantic_extra__``, ``__pydantic_fields_set__``, ``__pydantic_private__``), which
``BaseModel.__deepcopy__`` and ``model_construct`` fill the same way. For hot paths whose values
are already valid (a config copied per rollout, a sample built from a validated output), where
``model_construct`` costs several times more.
"""

from __future__ import annotations

from typing import Any

_set = object.__setattr__


def fill_model(
    instance: Any,
    fields: dict[str, Any],
    fields_set: set[str],
    extra: dict[str, Any] | None = None,
) -> None:
    """Set the state of ``instance`` (made with ``object.__new__`` of a model class whose
    private attributes are unused): ``fields`` in field order, the names counted as set, and
    the extra fields of an ``extra="allow"`` model."""
    _set(instance, "__dict__", fields)
    _set(instance, "__pydantic_extra__", extra)
    _set(instance, "__pydantic_fields_set__", fields_set)
    _set(instance, "__pydantic_private__", None)
