"""A rollout pinned to the 0.3 SDK (``osmosis-ai...<0.4``): find the pin and the exact edit.

Every rollout scaffolded by ``osmosis-ai`` 0.3.x declares ``osmosis-ai[server]>=0.3.0,<0.4``.
This SDK runs that rollout's code unmodified, but the pin still decides what gets installed:
``pip install -e rollouts/<name>`` and ``osmosis eval run --isolated`` resolve the old 0.3 release
from PyPI, and ``osmosis rollout validate`` (which checks declared dependencies before importing)
would skip its import check. The fix is one edit of ``pyproject.toml``: keep the requirement's
extras and markers, replace its version range with this SDK's (``>=0.4,<0.5``).
``osmosis rollout validate`` reports the edit; ``osmosis doctor`` reports it and ``--fix`` applies it.
"""

from __future__ import annotations

import contextlib
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

SDK_DISTRIBUTION = "osmosis-ai"
#: Versions of the public SDK a legacy pin admits (any one of them marks the pin as legacy).
_LEGACY_VERSIONS = ("0.1.0", "0.2.0", "0.3.0", "0.3.8", "0.3.99")
#: 0.3.x extras whose name changed here.
_RENAMED_EXTRAS = {"full": "all"}
_FALLBACK_VERSION = "0.4.0"


@dataclass(frozen=True)
class LegacyPin:
    """One ``osmosis-ai`` requirement that excludes this SDK: ``old`` as written, ``new`` to use."""

    pyproject: Path
    old: str
    new: str

    def describe(self, root: Path | None = None) -> str:
        where = self.pyproject
        if root is not None:
            with contextlib.suppress(ValueError):
                where = self.pyproject.relative_to(root)
        return f'{where}: "{self.old}" -> "{self.new}"'


def sdk_version() -> Version:
    """The installed ``osmosis-ai`` version (its umbrella distribution), else 0.4.0."""
    try:
        return Version(metadata.version(SDK_DISTRIBUTION))
    except (metadata.PackageNotFoundError, InvalidVersion):
        return Version(_FALLBACK_VERSION)


def supported_range(version: Version | None = None) -> str:
    """``>=0.4,<0.5`` for 0.4.x: the range this SDK's own scaffold pins."""
    v = version or sdk_version()
    return f">={v.major}.{v.minor},<{v.major}.{v.minor + 1}"


def legacy_sdk_pins(rollout_dir: Path) -> list[LegacyPin]:
    """The ``osmosis-ai`` requirements in ``rollout_dir/pyproject.toml`` that exclude the installed
    SDK but admit an older (0.3 or earlier) one. An unreadable pyproject has none."""
    pyproject = rollout_dir / "pyproject.toml"
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    declared = data.get("project", {}).get("dependencies", [])
    if not isinstance(declared, list):
        return []
    current = sdk_version()
    pins: list[LegacyPin] = []
    for spec in declared:
        if not isinstance(spec, str):
            continue
        try:
            requirement = Requirement(spec)
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) != SDK_DISTRIBUTION:
            continue
        specifier = requirement.specifier
        if not specifier or specifier.contains(current, prereleases=True):
            continue
        if not any(specifier.contains(v, prereleases=True) for v in _LEGACY_VERSIONS):
            continue
        extras = sorted(_RENAMED_EXTRAS.get(e, e) for e in requirement.extras)
        new = requirement.name + (f"[{','.join(extras)}]" if extras else "")
        new += supported_range(current)
        if requirement.marker is not None:
            new += f"; {requirement.marker}"
        pins.append(LegacyPin(pyproject, spec, new))
    return pins


def apply_pin_fixes(pins: list[LegacyPin]) -> list[LegacyPin]:
    """Rewrite each pin in place (the quoted string, nothing else of the file); returns the
    ones applied."""
    applied: list[LegacyPin] = []
    for pin in pins:
        text = pin.pyproject.read_text(encoding="utf-8")
        for quote in ('"', "'"):
            quoted = f"{quote}{pin.old}{quote}"
            if quoted in text:
                text = text.replace(quoted, f'"{pin.new}"', 1)
                pin.pyproject.write_text(text, encoding="utf-8")
                applied.append(pin)
                break
    return applied
