"""``HarborBackend``: every rollout runs as one real Harbor trial.

Installed by ``pip install 'osmosis-ai[harbor]'`` (distribution ``osmosis-harbor``).

Public names (imported lazily, so ``import osmosis_ai.rollout.backend.harbor`` stays cheap):

- :class:`HarborBackend`, :class:`TaskMode` (``"template"`` | ``"dataset"``);
- **environment selection for a rollout's** ``main.py``:
  ``environment_config_from_env()`` (in :mod:`.environments`) reads ``OSMOSIS_HARBOR_ENV`` =
  ``skypilot`` | ``docker`` | ``local`` and returns the Harbor ``EnvironmentConfig``; unset or
  unknown raises :class:`EnvironmentSelectionError` listing the choices. Explicit builders:
  ``skypilot_environment_config(...)``, ``docker_environment_config()``,
  ``local_environment_config()``;
- ``LOCAL_ENVIRONMENT_IMPORT_PATH``: the Docker-free mount-namespace sandbox
  (:mod:`.local_environment`), for tests only;
- ``sweep_orphans()``: remove sandboxes whose owner process died (a backend does this before
  its first trial; see :mod:`._sandbox_owner`);
- ``export_harbor_tasks(rows, out_dir, workflow=, grader=, ...)`` and ``HarborTaskRow``: write
  a rollout + dataset as Harbor task folders whose verifier runs the rollout's grader
  (:mod:`.export`; ``osmosis rollout export-harbor`` on the command line).

A typical ``main.py``::

    from harbor.trial.queue import TrialQueue
    from harbor.models.job.config import RetryConfig
    from . import HarborBackend, environment_config_from_env

    backend = HarborBackend(
        orchestrator=TrialQueue(n_concurrent=8, retry_config=RetryConfig(max_retries=0)),
        tasks_dir=Path(__file__).parent / "task",
        agent=MyWorkflow,
        grader=MyGrader,
        environment_config=environment_config_from_env(),
    )
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.rollout.integrations.spi import lazy_exports

_EXPORTS = {
    "HarborBackend": "osmosis_ai.rollout.backend.harbor.backend",
    "TaskMode": "osmosis_ai.rollout.backend.harbor.tasks",
    "EnvironmentSelectionError": "osmosis_ai.rollout.backend.harbor.environments",
    "environment_config_from_env": "osmosis_ai.rollout.backend.harbor.environments",
    "skypilot_environment_config": "osmosis_ai.rollout.backend.harbor.environments",
    "docker_environment_config": "osmosis_ai.rollout.backend.harbor.environments",
    "local_environment_config": "osmosis_ai.rollout.backend.harbor.environments",
    "LOCAL_ENVIRONMENT_IMPORT_PATH": "osmosis_ai.rollout.backend.harbor.local_environment",
    "sweep_orphans": "osmosis_ai.rollout.backend.harbor._sandbox_owner",
    "export_harbor_tasks": "osmosis_ai.rollout.backend.harbor.export",
    "HarborTaskRow": "osmosis_ai.rollout.backend.harbor.export",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (checked by a core test)
    from ._sandbox_owner import sweep_orphans as sweep_orphans
    from .backend import HarborBackend as HarborBackend
    from .environments import EnvironmentSelectionError as EnvironmentSelectionError
    from .environments import docker_environment_config as docker_environment_config
    from .environments import environment_config_from_env as environment_config_from_env
    from .environments import local_environment_config as local_environment_config
    from .environments import skypilot_environment_config as skypilot_environment_config
    from .export import HarborTaskRow as HarborTaskRow
    from .export import export_harbor_tasks as export_harbor_tasks
    from .local_environment import LOCAL_ENVIRONMENT_IMPORT_PATH as LOCAL_ENVIRONMENT_IMPORT_PATH
    from .tasks import TaskMode as TaskMode
