"""How fast, how many, and how persistently a backend creates sandboxes, per environment.

A :class:`SandboxLimits` is resolved once per backend (:func:`resolve_limits`) from, in order of
precedence, ``HarborBackend`` arguments, ``OSMOSIS_HARBOR_*`` environment variables and the
defaults of the environment the trials run in (:data:`DEFAULTS`):

- ``sandbox_creation_rate`` / ``OSMOSIS_HARBOR_CREATION_RATE``: sandboxes created per second
  (0 = no limit). Default: no limit for ``local``; 5 for ``docker``, ``skypilot`` and custom
  providers.
- ``max_concurrent_sandboxes`` / ``OSMOSIS_HARBOR_MAX_SANDBOXES``: sandboxes alive at once
  (0 = no limit). Default: no limit (the ``TrialQueue``'s ``n_concurrent`` bounds them).
- ``sandbox_creation_attempts`` / ``OSMOSIS_HARBOR_CREATION_ATTEMPTS``: tries per sandbox
  before its rollout fails. Default: 3.
- ``sandbox_creation_backoff_sec`` / ``OSMOSIS_HARBOR_CREATION_BACKOFF_SEC``: the first retry's
  delay, doubled per retry (at most 30 s), with jitter. Default: 1.

5 creations per second is the documented cap of a peer sandbox service (Modal) and a safe pace
for a Kubernetes API server or a Docker daemon; the local sandbox is a process and a directory,
so it is not limited. :mod:`._sandbox_gate` enforces these limits.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from osmosis_ai.errors import ConfigurationError

RATE_ENV: Final = "OSMOSIS_HARBOR_CREATION_RATE"
MAX_SANDBOXES_ENV: Final = "OSMOSIS_HARBOR_MAX_SANDBOXES"
ATTEMPTS_ENV: Final = "OSMOSIS_HARBOR_CREATION_ATTEMPTS"
BACKOFF_ENV: Final = "OSMOSIS_HARBOR_CREATION_BACKOFF_SEC"
MAX_BACKOFF_SEC: Final = 30.0


class SandboxLimitsError(ConfigurationError):
    """A sandbox limit (argument or ``OSMOSIS_HARBOR_*`` variable) is not a valid value."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """``creation_rate`` per second and ``max_concurrent`` sandboxes (``None``: no limit)."""

    environment: str
    creation_rate: float | None = None
    max_concurrent: int | None = None
    creation_attempts: int = 3
    backoff_sec: float = 1.0

    def as_kwargs(self) -> dict[str, object]:
        """The JSON form carried in the trial's ``EnvironmentConfig.kwargs``."""
        return {
            "environment": self.environment,
            "creation_rate": self.creation_rate,
            "max_concurrent": self.max_concurrent,
            "creation_attempts": self.creation_attempts,
            "backoff_sec": self.backoff_sec,
        }

    @classmethod
    def from_kwargs(cls, values: Mapping[str, object]) -> SandboxLimits:
        rate, cap = values.get("creation_rate"), values.get("max_concurrent")
        return cls(
            environment=str(values.get("environment") or "custom"),
            creation_rate=float(rate) if isinstance(rate, int | float) else None,
            max_concurrent=int(cap) if isinstance(cap, int | float) else None,
            creation_attempts=int(values.get("creation_attempts") or 1),  # type: ignore[arg-type]
            backoff_sec=float(values.get("backoff_sec") or 0.0),  # type: ignore[arg-type]
        )

    def describe(self) -> str:
        rate = f"{self.creation_rate:g}/s" if self.creation_rate else "unlimited"
        cap = str(self.max_concurrent) if self.max_concurrent else "unlimited"
        return (
            f"{self.environment}: creation rate {rate}, at most {cap} sandboxes, "
            f"{self.creation_attempts} attempts, backoff {self.backoff_sec:g}s"
        )


#: Per-environment defaults (``environment_name()`` of the backend's ``EnvironmentConfig``).
DEFAULTS: Final[dict[str, SandboxLimits]] = {
    "local": SandboxLimits("local", creation_rate=None),
    "docker": SandboxLimits("docker", creation_rate=5.0),
    "skypilot": SandboxLimits("skypilot", creation_rate=5.0),
    "custom": SandboxLimits("custom", creation_rate=5.0),
}


def resolve_limits(
    environment: str,
    *,
    creation_rate: float | None = None,
    max_concurrent: int | None = None,
    creation_attempts: int | None = None,
    backoff_sec: float | None = None,
    env: Mapping[str, str] | None = None,
) -> SandboxLimits:
    """Arguments win over ``OSMOSIS_HARBOR_*`` variables, which win over :data:`DEFAULTS`.

    Raises :class:`SandboxLimitsError` naming the argument or variable and a valid example.
    """
    settings = os.environ if env is None else env
    base = DEFAULTS.get(environment) or SandboxLimits(environment, creation_rate=5.0)

    def pick(arg: object, name: str, variable: str, default: object, kind: str) -> object:
        if arg is not None:
            return _check(arg, f"{name}=", kind, example=f"{name}=2")
        raw = settings.get(variable, "").strip()
        if not raw:
            return default
        return _check(raw, f"{variable}=", kind, example=f"{variable}=2")

    rate = pick(creation_rate, "sandbox_creation_rate", RATE_ENV, base.creation_rate, "rate")
    cap = pick(
        max_concurrent, "max_concurrent_sandboxes", MAX_SANDBOXES_ENV, base.max_concurrent, "cap"
    )
    attempts = pick(
        creation_attempts, "sandbox_creation_attempts", ATTEMPTS_ENV, base.creation_attempts, "n"
    )
    backoff = pick(
        backoff_sec, "sandbox_creation_backoff_sec", BACKOFF_ENV, base.backoff_sec, "sec"
    )
    return SandboxLimits(
        environment=environment,
        creation_rate=rate or None,  # type: ignore[arg-type]
        max_concurrent=cap or None,  # type: ignore[arg-type]
        creation_attempts=attempts,  # type: ignore[arg-type]
        backoff_sec=backoff,  # type: ignore[arg-type]
    )


_KINDS: Final = {
    "rate": "a number of sandboxes per second >= 0 (0 = no limit)",
    "cap": "a whole number of sandboxes >= 0 (0 = no limit)",
    "n": "a whole number of attempts >= 1",
    "sec": "a number of seconds >= 0",
}


def _check(value: object, label: str, kind: str, *, example: str) -> float | int | None:
    """``value`` as the number ``kind`` needs, or a :class:`SandboxLimitsError`."""
    whole = kind in ("cap", "n")
    number: float | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in ("unlimited", "none") and kind in ("rate", "cap"):
            return None
        try:
            number = float(text)
        except ValueError:
            number = None
    minimum = 1 if kind == "n" else 0
    valid = (
        number is not None
        and math.isfinite(number)
        and number >= minimum
        and (not whole or number.is_integer())
    )
    if not valid or number is None:
        raise SandboxLimitsError(
            f"{label}{value!r} is not valid: expected {_KINDS[kind]}, e.g. {example}"
        )
    return int(number) if whole else number
