"""Turn a missing integration into an error that says which ``pip install`` fixes it.

Integration distributions add leaf packages under ``osmosis_ai.rollout`` (for example
``...integrations.agents.strands``). When one is not installed, Python would report a bare
``ModuleNotFoundError``. A meta-path finder appended *last* to ``sys.meta_path`` only sees
imports every other finder failed to resolve, so it never shadows an installed integration; for
the known leaves it raises the error with the exact install command.

An integration that *is* installed while its framework is not (``osmosis-strands`` without
``strands-agents``) fails later, when a name is first resolved; the integrations' lazy exports
(:func:`osmosis_ai.rollout.integrations.spi.lazy_exports`) turn that failure into the same
message through :func:`with_install_hint`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

# leaf module -> (feature name, extra of the osmosis-ai umbrella package, distribution)
OPTIONAL_MODULES: dict[str, tuple[str, str, str]] = {
    "osmosis_ai.rollout.integrations.agents.strands": (
        "The Strands integration",
        "strands",
        "osmosis-strands",
    ),
    "osmosis_ai.rollout.integrations.agents.openai_agents": (
        "The OpenAI Agents integration",
        "openai-agents",
        "osmosis-openai-agents",
    ),
    "osmosis_ai.rollout.integrations.agents.pydantic_ai": (
        "The Pydantic AI integration",
        "pydantic-ai",
        "osmosis-pydantic-ai",
    ),
    "osmosis_ai.rollout.integrations.agents.langgraph": (
        "The LangGraph integration",
        "langgraph",
        "osmosis-langgraph",
    ),
    "osmosis_ai.rollout.integrations.agents.adk": (
        "The Google ADK integration",
        "adk",
        "osmosis-adk",
    ),
    "osmosis_ai.rollout.backend.harbor": (
        "HarborBackend",
        "harbor",
        "osmosis-harbor",
    ),
    "osmosis_ai.rollout.integrations.environments.verifiers": (
        "The verifiers environment source",
        "verifiers",
        "osmosis-environments",
    ),
    "osmosis_ai.rollout.integrations.environments.inspect": (
        "The Inspect AI environment source",
        "inspect",
        "osmosis-environments",
    ),
    "osmosis_ai.rollout.integrations.environments.reasoning_gym": (
        "The Reasoning Gym environment source",
        "reasoning-gym",
        "osmosis-environments",
    ),
}


def install_hint(extra: str) -> str:
    """The install command for an extra, quoted as osmosis-ai 0.3.8 prints it."""
    return f'pip install "osmosis-ai[{extra}]"'


def _leaf_of(module: str) -> str | None:
    for leaf in OPTIONAL_MODULES:
        if module == leaf or module.startswith(leaf + "."):
            return leaf
    return None


def with_install_hint(package: str, exc: ModuleNotFoundError) -> ModuleNotFoundError | None:
    """The error to raise instead of ``exc`` when importing part of the installed integration
    ``package`` failed because a third-party module (its framework, say ``strands``) is missing:
    the same install command as a missing integration gets. ``None`` when ``exc`` is something
    else (not a known integration, or a missing ``osmosis_ai`` module)."""
    leaf = _leaf_of(package)
    missing = exc.name or ""
    if leaf is None or not missing or missing.split(".")[0] == "osmosis_ai":
        return None
    feature, extra, dist = OPTIONAL_MODULES[leaf]
    return ModuleNotFoundError(
        f"{feature} requires optional dependencies. Install them with "
        f"`{install_hint(extra)}` ({dist!r} is installed, but the module {missing!r} it needs "
        "is not).",
        name=missing,
    )


class MissingExtraFinder:
    """A last-resort finder that explains how to install a missing optional leaf package."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        known = OPTIONAL_MODULES.get(fullname)
        if known is None:
            return None
        feature, extra, dist = known
        # 0.3.8's wording, plus which distribution provides the missing module.
        raise ModuleNotFoundError(
            f"{feature} requires optional dependencies. Install them with "
            f"`{install_hint(extra)}` ({fullname} is provided by the {dist!r} distribution).",
            name=fullname,
        )


def install_missing_extra_hints() -> None:
    """Append the finder once (idempotent across the parent packages that call it)."""
    if not any(isinstance(f, MissingExtraFinder) for f in sys.meta_path):
        sys.meta_path.append(MissingExtraFinder())
