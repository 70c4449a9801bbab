"""The one place sandboxes are created and destroyed: limits, retries, owner labels.

Every trial environment (SkyPilot, Docker, the local sandbox, a custom provider) is loaded
through :func:`gated_environment_config`, which swaps the caller's ``EnvironmentConfig`` for an
import path of this module naming a subclass of the real provider class. Its ``start`` and
``stop`` go through a :class:`SandboxGate` shared by all backends of the event loop that use
the same environment and limits (:mod:`._sandbox_limits`):

- a **slot** (the concurrent-sandbox cap) is taken before the sandbox is created and given back
  only after it is destroyed;
- each creation attempt is **admitted** by a sliding-window rate limiter: with a rate ``r``,
  at most ``ceil(r)`` creations are admitted in any ``ceil(r) / r`` seconds (for ``r = 2``, no
  1-second window holds more than two);
- a failed attempt is cleaned up and retried after an exponential backoff with jitter, unless
  the error is a configuration error (:func:`is_transient`); after the last attempt the trial
  fails with :class:`SandboxCreationError` naming the cause.

The backend takes the slot and the first admission in Harbor's ``ENVIRONMENT_START`` hook
(:meth:`SandboxGate.reserve`), so that waiting for them does not count against the task's
environment build timeout, which Harbor applies to ``start`` itself.

Each sandbox is labelled with its owner process (:mod:`._sandbox_owner`): SkyPilot sandboxes
are named ``osmo-<owner>-...``, local sandboxes carry an ``owner.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, Final

from osmosis_ai.errors import BackendError
from osmosis_ai.rollout.integrations.spi import Backoff

from . import _sandbox_owner
from ._sandbox_limits import MAX_BACKOFF_SEC, SandboxLimits

if TYPE_CHECKING:
    from harbor.environments.base import BaseEnvironment
    from harbor.models.trial.config import EnvironmentConfig

LIMITS_KWARG: Final = "osmosis_sandbox_limits"
_TYPE_PREFIX: Final = "type_"
_PATH_PREFIX: Final = "path_"


class SandboxCreationError(BackendError):
    """A sandbox could not be created within its attempts (the message names the cause)."""


def is_transient(exc: BaseException) -> bool:
    """Whether creating the sandbox again may succeed: everything but configuration errors
    (bad values, a missing SDK or extra, an unsupported Dockerfile)."""
    from ._dockerfile import UnsupportedEnvironmentError

    permanent = (ValueError, TypeError, ImportError, NotImplementedError, PermissionError)
    return not isinstance(exc, (*permanent, UnsupportedEnvironmentError))


def backoff_delay(attempt: int, base_sec: float) -> float:
    """Wait before retry ``attempt`` (1-based): ``base * 2**(attempt-1)``, at most
    :data:`MAX_BACKOFF_SEC`, with equal jitter (between half and all of it)."""
    return Backoff(base_sec, MAX_BACKOFF_SEC).delay(attempt)


class SandboxGate:
    """Rate limiter, slots and per-session leases for one environment (see the module docs)."""

    def __init__(self, limits: SandboxLimits) -> None:
        self.limits = limits
        rate = limits.creation_rate
        self._burst = max(1, math.ceil(rate)) if rate else 0
        self._window = self._burst / rate if rate else 0.0
        self._recent: deque[float] = deque()
        self._rate_lock = asyncio.Lock()
        cap = limits.max_concurrent
        self._slots = asyncio.Semaphore(cap) if cap else None
        self._leases: dict[str, bool] = {}  # session -> holds an unused admission
        #: ``time.monotonic()`` of every admitted creation attempt (the last 10 000).
        self.admissions: deque[float] = deque(maxlen=10_000)
        self.live = 0  # sandboxes holding a slot

    async def admit(self) -> float:
        """Wait until the rate limit allows one more creation; returns its admission time."""
        if not self._burst:
            now = time.monotonic()
            self.admissions.append(now)
            return now
        async with self._rate_lock:
            while True:
                now = time.monotonic()
                while self._recent and self._recent[0] <= now - self._window:
                    self._recent.popleft()
                if len(self._recent) < self._burst:
                    self._recent.append(now)
                    self.admissions.append(now)
                    return now
                await asyncio.sleep(self._recent[0] + self._window - now)

    async def reserve(self, session: str) -> None:
        """Take a slot and one admission for ``session`` (idempotent)."""
        if session in self._leases:
            return
        if self._slots is not None:
            await self._slots.acquire()
        try:
            await self.admit()
        except BaseException:
            if self._slots is not None:
                self._slots.release()
            raise
        self._leases[session] = True
        self.live += 1

    async def before_attempt(self, session: str) -> None:
        """Before each creation attempt: use the reserved admission, or wait for a new one."""
        if session not in self._leases:
            await self.reserve(session)
        if self._leases[session]:
            self._leases[session] = False
            return
        await self.admit()

    def release(self, session: str) -> None:
        """The session's sandbox is gone: give its slot back (idempotent)."""
        if self._leases.pop(session, None) is None:
            return
        self.live -= 1
        if self._slots is not None:
            self._slots.release()


_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[SandboxLimits, SandboxGate]]
_GATES = weakref.WeakKeyDictionary()


def gate_for(limits: SandboxLimits) -> SandboxGate:
    """The running loop's gate for these limits (asyncio primitives belong to one loop)."""
    gates = _GATES.setdefault(asyncio.get_running_loop(), {})
    gate = gates.get(limits)
    if gate is None:
        gate = gates[limits] = SandboxGate(limits)
    return gate


class _GatedEnvironment:
    """Mixed in before the provider class: gated ``start``/``stop`` and the owner label."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        limits = kwargs.pop(LIMITS_KWARG, None) or {}
        self._osmosis_limits = SandboxLimits.from_kwargs(limits)
        super().__init__(*args, **kwargs)
        env: BaseEnvironment = self  # type: ignore[assignment]
        self._osmosis_session = str(env.session_id)
        if hasattr(self, "_sandbox_name"):  # SkyPilot: the name carries the owner
            self._sandbox_name = _sandbox_owner.sandbox_name(self._osmosis_session)

    async def start(self, force_build: bool) -> None:
        gate = gate_for(self._osmosis_limits)
        limits = gate.limits
        provider = super()
        for attempt in range(1, limits.creation_attempts + 1):
            await gate.before_attempt(self._osmosis_session)
            try:
                await provider.start(force_build)  # type: ignore[misc]
                return
            except Exception as exc:
                with contextlib.suppress(Exception):
                    await provider.stop(True)  # type: ignore[misc]
                if not is_transient(exc):
                    gate.release(self._osmosis_session)
                    raise
                if attempt == limits.creation_attempts:
                    gate.release(self._osmosis_session)
                    raise SandboxCreationError(
                        f"could not create a {limits.environment} sandbox after {attempt} "
                        f"attempt(s) (set OSMOSIS_HARBOR_CREATION_ATTEMPTS or "
                        f"sandbox_creation_attempts= to retry more): "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
            await asyncio.sleep(backoff_delay(attempt, limits.backoff_sec))

    async def stop(self, delete: bool) -> None:
        try:
            await super().stop(delete)  # type: ignore[misc]
        finally:
            with contextlib.suppress(RuntimeError):  # no running loop: nothing was gated
                gate_for(self._osmosis_limits).release(self._osmosis_session)


_CLASSES: dict[str, type] = {}


def _gated_class(name: str) -> type:
    cls = _CLASSES.get(name)
    if cls is not None:
        return cls
    if name.startswith(_TYPE_PREFIX):
        from harbor.environments.factory import _load_environment_class
        from harbor.models.environment_type import EnvironmentType

        base = _load_environment_class(EnvironmentType(name[len(_TYPE_PREFIX) :]))
    elif name.startswith(_PATH_PREFIX):
        from harbor.utils.import_path import import_class

        path = bytes.fromhex(name[len(_PATH_PREFIX) :]).decode()
        base = import_class(path, label="environment")
    else:
        raise AttributeError(name)
    cls = _CLASSES[name] = type(f"Gated{base.__name__}", (_GatedEnvironment, base), {})
    return cls


def __getattr__(name: str) -> type:
    """``_sandbox_gate:type_<harbor type>`` and ``_sandbox_gate:path_<hex import path>``."""
    return _gated_class(name)


def gated_environment_config(config: EnvironmentConfig, limits: SandboxLimits) -> EnvironmentConfig:
    """A copy of ``config`` whose provider goes through the gate (see the module docs)."""
    gated = config.model_copy(deep=True)
    if config.import_path is not None:
        symbol = _PATH_PREFIX + config.import_path.encode().hex()
    else:
        from harbor.models.environment_type import EnvironmentType

        env_type = config.type or EnvironmentType.DOCKER
        symbol = _TYPE_PREFIX + str(getattr(env_type, "value", env_type))
    gated.type = None
    gated.import_path = f"{__name__}:{symbol}"
    gated.kwargs = {**config.kwargs, LIMITS_KWARG: limits.as_kwargs()}
    return gated
