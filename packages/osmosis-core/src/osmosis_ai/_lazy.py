"""Lazy re-exports for package ``__init__`` modules.

Public packages such as :mod:`osmosis_ai.rollout` re-export names from submodules that import
pydantic (about 0.3 s to build the models). Resolving the names on first attribute access keeps
``import osmosis_ai.rollout`` and CLI start-up fast while ``from osmosis_ai.rollout import X``
keeps working exactly as it does with eager imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for a package that re-exports ``exports``.

    ``exports`` maps a public name to the absolute module that defines it.
    """

    def __getattr__(name: str) -> Any:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        # Cache on the package so the next access is a plain dict lookup.
        importlib.import_module(package).__dict__[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(importlib.import_module(package).__dict__) | set(exports))

    return __getattr__, __dir__


def exports_from(modules: Mapping[str, str]) -> dict[str, str]:
    """Invert ``{module: "Name OtherName ..."}`` into the ``{name: module}`` map of :func:`lazy_exports`.

    A package lists its public names grouped by the module that defines them, one line a module.
    """
    return {name: module for module, names in modules.items() for name in names.split()}
