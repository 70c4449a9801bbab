"""Which osmosis distributions are installed, and the SDK version to show for them.

Users install the umbrella ``osmosis-ai`` (0.4.x, the successor of the public 0.3.8); its
members ``osmosis-core``, ``osmosis-cli`` and the integrations carry their own, independent
versions (0.1.x). What names "the SDK" — a trajectory's ``agent.version``, the rollout server's
``x-osmosis-rollout-sdk-version`` header, ``osmosis_ai.__version__`` — is the osmosis-ai version
when the umbrella is installed, else osmosis-core's (core installed alone). ``osmosis --version``
lists every installed distribution.
"""

from __future__ import annotations

from functools import cache

__all__ = ["DISTRIBUTIONS", "installed_versions", "sdk_version"]

UMBRELLA = "osmosis-ai"
#: The umbrella first, then its members.
DISTRIBUTIONS = (
    UMBRELLA,
    "osmosis-core",
    "osmosis-cli",
    "osmosis-strands",
    "osmosis-openai-agents",
    "osmosis-harbor",
    "osmosis-pydantic-ai",
    "osmosis-adk",
)
UNKNOWN = "0+unknown"


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


@cache
def sdk_version() -> str:
    """osmosis-ai's version, else osmosis-core's, else ``0+unknown`` (a source checkout)."""
    return _version(UMBRELLA) or _version("osmosis-core") or UNKNOWN


def installed_versions() -> dict[str, str]:
    """``{distribution: version}`` of every installed osmosis distribution, umbrella first."""
    found = {name: _version(name) for name in DISTRIBUTIONS}
    return {name: v for name, v in found.items() if v is not None}
