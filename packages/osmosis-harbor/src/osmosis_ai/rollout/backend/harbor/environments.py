"""Where a Harbor trial runs: one ``EnvironmentConfig`` per deployment target.

The backend treats the environment as a pure injection point; the trial, agent and verifier
configuration is identical everywhere. A rollout's ``main.py`` picks the target from settings::

    from . import environment_config_from_env

    backend = HarborBackend(..., environment_config=environment_config_from_env())

``OSMOSIS_HARBOR_ENV`` selects the target and has no default, because guessing wrong is
expensive either way (a laptop trying to reach a cluster, or production running tests' unsafe
sandbox):

- ``skypilot``: SkyPilot sandboxes (production). Settings: ``HARBOR_SKYPILOT_CONTEXT`` (the
  Kubernetes context), ``HARBOR_SKYPILOT_REGISTRY`` (where Dockerfile tasks are pushed) or
  ``HARBOR_SKYPILOT_POOL`` (a pre-warmed pool), optional ``HARBOR_SKYPILOT_NAMESPACE``. Needs the
  SkyPilot Platform SDK (``sky.sandbox``), which is not on PyPI.
- ``docker``: Harbor's Docker environment (development; needs a Docker daemon).
- ``local``: :mod:`.local_environment`, a Docker-free mount-namespace sandbox **for tests only**.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from osmosis_ai.errors import ConfigurationError

if TYPE_CHECKING:
    from harbor.models.trial.config import EnvironmentConfig

logger = logging.getLogger(__name__)

ENV_SELECTOR: Final = "OSMOSIS_HARBOR_ENV"
ENVIRONMENT_CHOICES: Final = ("skypilot", "docker", "local")

# The in-sandbox installer reads these (see agent.py): which interpreter runs the bundle, and
# whether the bundle's dependencies are already present (true when the sandbox is the host).
SANDBOX_PYTHON_ENV: Final = "OSMOSIS_SANDBOX_PYTHON"
BUNDLE_NO_DEPS_ENV: Final = "OSMOSIS_BUNDLE_NO_DEPS"
#: The uv executable the sandbox's install script uses first (the local sandbox shares the
#: host's files, so the host's uv works there even when it is not on PATH).
SANDBOX_UV_ENV: Final = "OSMOSIS_SANDBOX_UV"

_SKYPILOT_SETTINGS: Final = {
    "HARBOR_SKYPILOT_CONTEXT": "context_name",
    "HARBOR_SKYPILOT_REGISTRY": "registry",
    "HARBOR_SKYPILOT_POOL": "pool",
    "HARBOR_SKYPILOT_NAMESPACE": "namespace",
}


class EnvironmentSelectionError(ConfigurationError):
    """``OSMOSIS_HARBOR_ENV`` is missing or names an unknown environment."""


def skypilot_environment_config(
    *,
    context_name: str | None = None,
    registry: str | None = None,
    pool: str | None = None,
    namespace: str | None = None,
    secrets: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> EnvironmentConfig:
    """SkyPilot sandboxes through Harbor's own ``skypilot`` provider.

    ``registry`` and ``pool`` are alternatives (a warm pool needs no image push); ``secrets``
    names SkyPilot Secrets Manager entries injected into the sandbox; ``env`` is set for every
    command (for example ``OSMOSIS_SANDBOX_PYTHON`` naming the image's interpreter).
    """
    from harbor.models.environment_type import EnvironmentType
    from harbor.models.trial.config import EnvironmentConfig

    if registry and pool:
        raise ValueError(
            "pass either registry (tasks are built and pushed there) or pool (a pre-warmed "
            "SkyPilot pool), not both"
        )
    kwargs: dict[str, object] = {
        key: value
        for key, value in {
            "context_name": context_name,
            "registry": registry,
            "pool": pool,
            "namespace": namespace,
            "secrets": secrets,
        }.items()
        if value
    }
    return EnvironmentConfig(type=EnvironmentType.SKYPILOT, kwargs=kwargs, env=dict(env or {}))


def docker_environment_config(env: dict[str, str] | None = None) -> EnvironmentConfig:
    """Harbor's Docker environment (each trial builds or pulls its task image); ``env`` is set
    for every command in the container."""
    from harbor.models.environment_type import EnvironmentType
    from harbor.models.trial.config import EnvironmentConfig

    return EnvironmentConfig(type=EnvironmentType.DOCKER, env=dict(env or {}))


def local_environment_config(python: str | None = None) -> EnvironmentConfig:
    """The Docker-free namespace sandbox (tests only; see :mod:`.local_environment`).

    The sandbox shares the host's userland, so the bundle runs with this interpreter
    (``python``, default ``sys.executable``) whose environment already has the rollout's
    dependencies; the bundle is installed without resolving them again.
    """
    from harbor.models.trial.config import EnvironmentConfig
    from osmosis_ai.rollout.integrations.spi import UvNotFoundError, find_uv

    from .local_environment import (
        LOCAL_ENVIRONMENT_IMPORT_PATH,
    )

    env = {SANDBOX_PYTHON_ENV: python or sys.executable, BUNDLE_NO_DEPS_ENV: "1"}
    # Without one, the install script falls back to `uv` on the sandbox's PATH, then pip.
    with contextlib.suppress(UvNotFoundError):
        env[SANDBOX_UV_ENV] = find_uv()
    return EnvironmentConfig(
        import_path=LOCAL_ENVIRONMENT_IMPORT_PATH, kwargs={"auto_mounting": True}, env=env
    )


def resolve_environment(
    passed: EnvironmentConfig | None, env: Mapping[str, str] | None = None
) -> EnvironmentConfig | None:
    """The environment trials run in: ``OSMOSIS_HARBOR_ENV``, when set, wins over the
    ``environment_config`` a rollout passes (0.3.x rollouts such as the workspace template's
    hard-code Harbor's Docker environment, so the operator's choice could not reach them
    otherwise); a passed config of the same kind is kept as it is. Unset, ``passed`` stands."""
    settings = os.environ if env is None else env
    if not settings.get(ENV_SELECTOR, "").strip():
        return passed
    selected = environment_config_from_env(settings)
    from ._config import environment_name

    chosen, given = environment_name(selected), environment_name(passed)
    if passed is not None and chosen == given:
        return passed
    if passed is not None:
        logger.warning(
            "%s=%s overrides the environment_config the rollout passes (%s): trials run in %s",
            ENV_SELECTOR,
            settings[ENV_SELECTOR].strip(),
            given,
            chosen,
        )
    return selected


def environment_config_from_env(env: Mapping[str, str] | None = None) -> EnvironmentConfig:
    """Pick the trial environment from ``OSMOSIS_HARBOR_ENV`` (see the module docs).

    Raises :class:`EnvironmentSelectionError` listing the choices when it is unset or unknown.
    """
    settings = os.environ if env is None else env
    choice = settings.get(ENV_SELECTOR, "").strip().lower()
    if choice == "skypilot":
        values = {arg: settings.get(var) or None for var, arg in _SKYPILOT_SETTINGS.items()}
        return skypilot_environment_config(
            context_name=values["context_name"],
            registry=values["registry"],
            pool=values["pool"],
            namespace=values["namespace"],
        )
    if choice == "docker":
        return docker_environment_config()
    if choice == "local":
        return local_environment_config()
    listed = ", ".join(ENVIRONMENT_CHOICES)
    if not choice:
        raise EnvironmentSelectionError(
            f"{ENV_SELECTOR} is not set; choose where Harbor trials run: {listed} "
            f"(skypilot = SkyPilot sandboxes for production, docker = a local Docker daemon, "
            f"local = a Docker-free sandbox for tests only), e.g. {ENV_SELECTOR}=docker"
        )
    raise EnvironmentSelectionError(
        f"{ENV_SELECTOR}={settings.get(ENV_SELECTOR)!r} is not a known environment; "
        f"choose one of: {listed}"
    )
