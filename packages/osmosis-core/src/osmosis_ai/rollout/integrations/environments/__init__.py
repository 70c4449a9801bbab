"""Environments from other ecosystems, run as osmosis rollouts.

A task written for another framework (a verifiers ``Environment``, an Inspect ``Task``, a
Reasoning Gym generator, a Harbor registry dataset) becomes the three things an osmosis rollout
is made of: an :class:`~osmosis_ai.rollout.AgentWorkflow`, a :class:`~osmosis_ai.rollout.Grader`
and dataset rows. One way to name them everywhere (``osmosis eval run --env SPEC``,
``env = "SPEC"`` under ``[experiment]``, ``osmosis env info SPEC``)::

    SOURCE:NAME[?KEY=VALUE&KEY=VALUE]

    reasoning-gym:leg_counting?size=20&seed=3
    verifiers:my_env_module
    inspect:tasks/arith.py@addition
    harbor:org/name@ref

Each *source* is an adapter module shipped by its own distribution (so core never imports a
foreign framework) and found under this package (``pkgutil.extend_path``); the module exposes
``SOURCE``, an object with the :class:`EnvironmentSource` methods. A missing adapter or missing
foreign package fails with the ``pip install`` that fixes it.

This module is part of the integration interface (:mod:`osmosis_ai.rollout.integrations.spi`):
kept compatible within a core minor version.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlencode

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.rollout.optional_imports import install_missing_extra_hints

if TYPE_CHECKING:
    from osmosis_ai.rollout.agent_workflow import AgentWorkflow
    from osmosis_ai.rollout.grader import Grader
    from osmosis_ai.rollout.types.config import BaseConfig

__path__ = pkgutil.extend_path(__path__, __name__)
install_missing_extra_hints()  # a missing adapter fails with its `pip install` (as agents/ does)

#: source name -> (adapter module, extra of the osmosis-ai umbrella, distribution)
SOURCES: dict[str, tuple[str, str, str]] = {
    "verifiers": (f"{__name__}.verifiers", "verifiers", "osmosis-environments"),
    "inspect": (f"{__name__}.inspect", "inspect", "osmosis-environments"),
    "reasoning-gym": (f"{__name__}.reasoning_gym", "reasoning-gym", "osmosis-environments"),
    "harbor": (f"{__name__}.harbor", "harbor", "osmosis-harbor"),
}

_SPEC_HELP = (
    "Name an environment as SOURCE:NAME[?KEY=VALUE&...], for example "
    "'reasoning-gym:leg_counting?size=20&seed=3'. Sources: " + ", ".join(SOURCES) + "."
)


class EnvironmentSpecError(ConfigurationError):
    """An environment spec cannot be parsed or loaded; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class EnvironmentSpec:
    """A parsed environment name: ``source``, ``name`` and string ``options``."""

    source: str
    name: str
    options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> EnvironmentSpec:
        raw = text.strip()
        source, sep, rest = raw.partition(":")
        if not sep or not source or not rest:
            raise EnvironmentSpecError(f"Environment {text!r} has no source. {_SPEC_HELP}")
        if source not in SOURCES:
            raise EnvironmentSpecError(f"Unknown environment source {source!r}. {_SPEC_HELP}")
        name, _, query = rest.partition("?")
        if not name:
            raise EnvironmentSpecError(f"Environment {text!r} names no environment. {_SPEC_HELP}")
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError:
            raise EnvironmentSpecError(
                f"Environment options {query!r} are not KEY=VALUE pairs joined by '&'. {_SPEC_HELP}"
            ) from None
        options: dict[str, str] = {}
        for key, value in pairs:
            if key in options:
                raise EnvironmentSpecError(
                    f"Environment option {key!r} is given twice in {text!r}."
                )
            options[key] = value
        return cls(source=source, name=name, options=options)

    def __str__(self) -> str:
        query = urlencode(sorted(self.options.items()))
        return f"{self.source}:{self.name}" + (f"?{query}" if query else "")


@dataclass(frozen=True, slots=True)
class Environment:
    """A foreign environment loaded as the parts of an osmosis rollout.

    ``rows`` are dataset rows in the osmosis dataset format (``docs/dataset-format.md``: prompt,
    messages or metadata mode, ``ground_truth`` as the label). ``metrics`` names the per-sample
    metrics the grader reports (one per foreign reward function or scorer). ``needs`` names what
    running it requires beyond a policy (``"sandbox"``, ``"network"``), for ``osmosis env info``.
    """

    spec: EnvironmentSpec
    workflow: type[AgentWorkflow[Any]]
    grader: type[Grader] | None
    rows: Sequence[Mapping[str, Any]]
    workflow_config: BaseConfig | None = None
    grader_config: BaseConfig | None = None
    metrics: tuple[str, ...] = ()
    description: str = ""
    needs: tuple[str, ...] = ()

    def create_backend(self, **backend_options: Any) -> Any:
        """A :class:`~osmosis_ai.rollout.backend.LocalBackend` running this environment."""
        from osmosis_ai.rollout.backend import LocalBackend

        return LocalBackend(
            workflow=self.workflow,
            workflow_config=self.workflow_config,
            grader=self.grader,
            grader_config=self.grader_config,
            **backend_options,
        )

    def create_app(self, **backend_options: Any) -> Any:
        """The rollout server app (what ``create_rollout_server`` returns) for this environment."""
        from osmosis_ai.rollout.server import create_rollout_server

        return create_rollout_server(backend=self.create_backend(**backend_options))


@dataclass(frozen=True, slots=True)
class EnvironmentInfo:
    """What ``osmosis env list`` / ``env info`` show about one environment."""

    spec: str
    description: str = ""
    rows: int | None = None
    metrics: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()


def typed_options(spec: EnvironmentSpec, fields: Mapping[str, Any], *, what: str) -> dict[str, Any]:
    """``spec.options`` converted to the types in ``fields`` (option name -> type annotation).

    ``int``/``float``/``bool``/``str`` (and ``X | None``: ``none`` or an empty value is ``None``)
    are parsed from the text; any other type (lists, tuples, dicts) is read as JSON. An option
    not in ``fields``, or a value that does not parse, raises :class:`EnvironmentSpecError`
    naming the option, the expected type and ``what`` accepts it.
    """
    import json
    import types
    import typing

    def convert(key: str, raw: str, kind: Any) -> Any:
        args = typing.get_args(kind)
        if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in args:
            if raw.strip().lower() in ("", "none", "null"):
                return None
            (kind,) = [a for a in args if a is not type(None)][:1] or [str]
        if kind is bool:
            lowered = raw.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError("expected true or false")
        if kind in (int, float, str):
            return kind(raw)
        value = json.loads(raw)
        origin = typing.get_origin(kind) or kind
        return tuple(value) if origin is tuple and isinstance(value, list) else value

    unknown = sorted(set(spec.options) - set(fields))
    if unknown:
        raise EnvironmentSpecError(
            f"{spec}: {what} has no option {', '.join(map(repr, unknown))}; its options are "
            + (", ".join(sorted(fields)) or "none")
            + "."
        )
    converted: dict[str, Any] = {}
    for key, raw in spec.options.items():
        kind = fields[key]
        try:
            converted[key] = convert(key, raw, kind)
        except (ValueError, TypeError) as exc:
            name = getattr(kind, "__name__", None) or str(kind).replace("typing.", "")
            raise EnvironmentSpecError(
                f"{spec}: option {key}={raw!r} is not a valid {name} ({exc}); give {key}=VALUE "
                "as a number, true/false, text or JSON as the type needs."
            ) from None
    return converted


@runtime_checkable
class EnvironmentSource(Protocol):
    """What an adapter module's ``SOURCE`` object provides."""

    def load(self, spec: EnvironmentSpec) -> Environment: ...

    def list(self) -> Iterable[EnvironmentInfo]: ...


def environment_source(source: str) -> EnvironmentSource:
    """The adapter for ``source``; a missing adapter or framework names the ``pip install``."""
    if source not in SOURCES:
        raise EnvironmentSpecError(f"Unknown environment source {source!r}. {_SPEC_HELP}")
    module_name, extra, _dist = SOURCES[source]
    from osmosis_ai.rollout.optional_imports import install_hint

    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"The {source!r} environment source needs {install_hint(extra)} ({exc})."
        ) from exc
    found = getattr(module, "SOURCE", None)
    if not isinstance(found, EnvironmentSource):
        raise EnvironmentSpecError(f"{module_name} does not define SOURCE (an EnvironmentSource).")
    return found


def load_environment(spec: str | EnvironmentSpec) -> Environment:
    """Parse ``spec`` (if a string) and load it through its source's adapter."""
    parsed = spec if isinstance(spec, EnvironmentSpec) else EnvironmentSpec.parse(spec)
    return environment_source(parsed.source).load(parsed)


@dataclass(frozen=True, slots=True)
class SourceListing:
    """One source in ``osmosis env list``: what it lists, or why it cannot (``missing``: the
    ``pip install`` that fixes it)."""

    source: str
    environments: tuple[EnvironmentInfo, ...] = ()
    missing: str | None = None


def list_environments(sources: Iterable[str] | None = None) -> list[SourceListing]:
    """What each source's adapter sees installed (``osmosis env list``); a source whose adapter
    or framework is missing is listed with the install command instead of failing."""
    listings: list[SourceListing] = []
    for source in sources if sources is not None else SOURCES:
        try:
            adapter = environment_source(source)
        except ModuleNotFoundError as exc:
            listings.append(SourceListing(source, missing=str(exc)))
            continue
        listings.append(SourceListing(source, tuple(adapter.list())))
    return listings


def environment_info(spec: str | EnvironmentSpec) -> EnvironmentInfo:
    """Load ``spec`` and describe it (``osmosis env info``): its rows, metrics and needs."""
    environment = load_environment(spec)
    return EnvironmentInfo(
        spec=str(environment.spec),
        description=environment.description,
        rows=len(environment.rows),
        metrics=environment.metrics,
        needs=environment.needs,
    )


__all__ = [
    "SOURCES",
    "Environment",
    "EnvironmentInfo",
    "EnvironmentSource",
    "EnvironmentSpec",
    "EnvironmentSpecError",
    "SourceListing",
    "environment_info",
    "environment_source",
    "list_environments",
    "load_environment",
    "typed_options",
]
