"""``HarborBackend``'s constructor arguments, validated once into a :class:`HarborConfig`.

Every rule about what a backend may be configured with lives here: the non-retrying queue, the
task directory and mode, the agent (a native Harbor agent or a bundled ``AgentWorkflow``), the
grader and configs (sent to the sandbox by import path or as JSON), the reward rule, and the
keywords from before 0.3, which raise a ``TypeError`` naming their replacement.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._outcome import RewardRule
from ._sandbox_limits import SandboxLimits
from .bundle import Bundle
from .native import NATIVE_AGENTS
from .tasks import TaskMode

if TYPE_CHECKING:
    from harbor.models.trial.config import EnvironmentConfig
    from harbor.trial.queue import TrialQueue

logger = logging.getLogger(__name__)

MIGRATION_GUIDE = "https://docs.osmosis.ai/migration-guides/v0-3"
LEGACY_KWARGS: dict[str, str] = {
    "task_dir": "tasks_dir= (a task directory in template mode, or a directory of tasks with "
    "task_mode='dataset')",
    "workflow": "agent= (an AgentWorkflow class or 'module:Class')",
    "user_code_dir": "code_dir=",
    "custom_tests_dir": "a tests/test.sh inside the task (it takes precedence) or grader=",
    "prebuild_local_image": "backend.prewarm() or prewarm_lifespan()",
    "symlink_environment": "nothing: tasks are copied per rollout and symlinks are rejected",
    "agent_name": "agent= (a native agent name such as 'terminus-2')",
    "agent_kwargs": "native_agent_kwargs=",
    "environment": "environment_config= (see environment_config_from_env())",
    "environment_type": "environment_config= (see environment_config_from_env())",
    "max_concurrency": "TrialQueue(n_concurrent=...) for concurrency, max_queue_depth= for 429s",
    "n_concurrent": "TrialQueue(n_concurrent=...)",
    "jobs_dir": "trials_dir=",
    "job_dir": "trials_dir=",
    "keep_trials": "cleanup_successful_trials=False",
}
_BUNDLE_NAME = re.compile(r"^(osmosis_bundle_[0-9a-f]{16})-")
_SENSITIVE_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)


@dataclass
class WorkflowSpec:
    """What the in-sandbox runner imports (``spec.json`` in the bundle)."""

    workflow: str | None = None
    workflow_config: dict[str, Any] | None = None
    grader: str | None = None
    grader_config: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "workflow_config": self.workflow_config,
            "grader": self.grader,
            "grader_config": self.grader_config,
        }


@dataclass
class HarborConfig:
    """A validated backend configuration (see :func:`build_config`)."""

    queue: TrialQueue
    tasks_dir: Path
    mode: TaskMode
    native: str | None
    spec: WorkflowSpec
    native_kwargs: dict[str, Any]
    model_name: str
    environment: EnvironmentConfig | None
    cleanup_successful_trials: bool
    agent_setup_timeout_sec: float | None
    max_queue_depth: int | None
    reward_rule: RewardRule
    code_dir: Path | None = None
    bundle: Bundle | None = None
    sandbox_limits: SandboxLimits = field(default_factory=lambda: SandboxLimits("docker"))
    # Harbor writes agent kwargs verbatim into the trial dir: key-like values are scrubbed
    # from it along with the rollout's own key.
    kwarg_secrets: tuple[str, ...] = field(default_factory=tuple)

    @property
    def agent_label(self) -> str:
        return self.native or self.spec.workflow or ""


def build_config(
    *,
    orchestrator: TrialQueue | None,
    tasks_dir: Path | str | None,
    agent: str | type | None,
    native_agent_kwargs: dict[str, Any] | None,
    task_mode: TaskMode | str,
    model_name: str,
    grader: type | str | None,
    workflow_config: Any,
    grader_config: Any,
    code_dir: Path | str | None,
    bundle: Path | str | None,
    environment_config: EnvironmentConfig | None,
    cleanup_successful_trials: bool,
    patch_dockerfile_with_sdk: bool | None,
    agent_setup_timeout_sec: float | None,
    max_queue_depth: int | None,
    reward_key: str | None,
    reward_weights: dict[str, float] | None,
    sandbox_limits: SandboxLimits,
) -> HarborConfig:
    """Validate ``HarborBackend``'s arguments (see its docstring for their meaning)."""
    queue = check_queue(orchestrator)
    resolved_tasks_dir = check_tasks_dir(tasks_dir)
    mode = check_mode(task_mode)
    check_limits(max_queue_depth, patch_dockerfile_with_sdk)
    native, spec = resolve_agent(agent, native_agent_kwargs, workflow_config, grader, grader_config)
    native_kwargs = dict(native_agent_kwargs or {})
    return HarborConfig(
        queue=queue,
        tasks_dir=resolved_tasks_dir,
        mode=mode,
        native=native,
        spec=spec,
        native_kwargs=native_kwargs,
        model_name=model_name,
        environment=environment_config,
        cleanup_successful_trials=cleanup_successful_trials,
        agent_setup_timeout_sec=agent_setup_timeout_sec,
        max_queue_depth=max_queue_depth,
        reward_rule=resolve_reward_rule(reward_key, reward_weights),
        code_dir=resolve_code_dir(spec, code_dir),
        bundle=resolve_bundle(bundle),
        kwarg_secrets=tuple(secret_values(native_kwargs)),
        sandbox_limits=sandbox_limits,
    )


def environment_name(environment: EnvironmentConfig | None) -> str:
    """Where trials run, for ``health()``: docker (Harbor's default), local, or the type."""
    if environment is None:
        return "docker"
    from .local_environment import (
        LOCAL_ENVIRONMENT_IMPORT_PATH,
    )

    if environment.import_path == LOCAL_ENVIRONMENT_IMPORT_PATH:
        return "local"
    env_type = getattr(environment, "type", None)
    return str(getattr(env_type, "value", env_type) or "custom")


def legacy_message(legacy: dict[str, Any]) -> str:
    parts = []
    for name in sorted(legacy):
        replacement = LEGACY_KWARGS.get(name)
        if replacement is None:
            parts.append(f"unexpected keyword argument {name!r}")
        else:
            parts.append(f"{name!r} was removed in osmosis 0.3; use {replacement}")
    return (
        "HarborBackend() got unsupported keyword arguments: "
        + "; ".join(parts)
        + f". See {MIGRATION_GUIDE}"
    )


def check_queue(orchestrator: Any) -> TrialQueue:
    if orchestrator is None:
        raise TypeError(
            "HarborBackend() needs orchestrator=: a harbor TrialQueue(n_concurrent=..., "
            "retry_config=RetryConfig(max_retries=0))"
        )
    if not callable(getattr(orchestrator, "submit", None)) or not callable(
        getattr(orchestrator, "add_hook", None)
    ):
        raise TypeError("orchestrator must be a harbor.trial.queue.TrialQueue")
    retry = getattr(orchestrator, "_retry_config", None)
    if retry is not None and getattr(retry, "max_retries", 0) != 0:
        raise ValueError(
            "the TrialQueue must not retry: create it with "
            "TrialQueue(n_concurrent=..., retry_config=RetryConfig(max_retries=0)); a retry "
            "would run a second trial for one rollout"
        )
    return orchestrator


def check_tasks_dir(tasks_dir: Path | str | None) -> Path:
    if tasks_dir is None:
        raise TypeError(
            "HarborBackend() needs tasks_dir=: a Harbor task directory (task.toml, "
            "instruction.md, environment/, tests/) or, with task_mode='dataset', a directory of them"
        )
    resolved = Path(tasks_dir).expanduser().resolve()
    if not resolved.is_dir():
        raise ValueError(f"tasks_dir {resolved} is not a directory")
    return resolved


def check_mode(task_mode: TaskMode | str) -> TaskMode:
    try:
        return TaskMode(task_mode)
    except ValueError:
        raise ValueError(
            f"task_mode={task_mode!r} is not valid; use 'template' or 'dataset'"
        ) from None


def check_limits(max_queue_depth: int | None, patch_dockerfile_with_sdk: bool | None) -> None:
    if max_queue_depth is not None and max_queue_depth < 1:
        raise ValueError("max_queue_depth must be at least 1 (or None for no limit)")
    if patch_dockerfile_with_sdk:
        raise ValueError(
            "patch_dockerfile_with_sdk is not supported: pre-install the rollout's "
            "dependencies in the task image (optionally in /opt/osmosis/venv, which the "
            "bundle installer prefers)"
        )


def resolve_agent(
    agent: str | type | None,
    native_agent_kwargs: dict[str, Any] | None,
    workflow_config: Any,
    grader: type | str | None,
    grader_config: Any,
) -> tuple[str | None, WorkflowSpec]:
    """The native agent name (or ``None``) and what the sandbox imports."""
    from osmosis_ai.rollout.agent_workflow import AgentWorkflow
    from osmosis_ai.rollout.grader import Grader

    if agent is None:
        raise ValueError(
            "agent= is required: a native Harbor agent "
            f"({', '.join(NATIVE_AGENTS)}) or an AgentWorkflow class / 'module:Class'"
        )
    native: str | None = None
    spec = WorkflowSpec()
    if isinstance(agent, str) and ":" not in agent:
        if agent not in NATIVE_AGENTS:
            raise ValueError(
                f"agent={agent!r} is not a supported native agent ({', '.join(NATIVE_AGENTS)}) "
                "and not a 'module:Class' import path of an AgentWorkflow"
            )
        native = agent
        if agent == "oracle":
            logger.warning(
                "agent='oracle' runs each task's reference solution and calls no model: "
                "use it to validate tasks, never for training"
            )
    else:
        if native_agent_kwargs:
            raise ValueError(
                "native_agent_kwargs only apply to native agents "
                f"({', '.join(NATIVE_AGENTS)}); configure a workflow with workflow_config="
            )
        spec.workflow = import_path_of(agent, "agent", AgentWorkflow)
        spec.workflow_config = config_spec(workflow_config, "workflow_config", spec.workflow)
    if grader is not None:
        spec.grader = import_path_of(grader, "grader", Grader)
        spec.grader_config = config_spec(grader_config, "grader_config", spec.grader)
    return native, spec


def resolve_reward_rule(
    reward_key: str | None, reward_weights: dict[str, float] | None
) -> RewardRule:
    if reward_key is not None and reward_weights is not None:
        raise ValueError("pass reward_key= or reward_weights=, not both")
    if reward_key is not None and (not isinstance(reward_key, str) or not reward_key):
        raise ValueError(f"reward_key must be a non-empty reward name; got {reward_key!r}")
    if reward_weights is not None:
        if not reward_weights or not all(
            isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
            for k, v in reward_weights.items()
        ):
            raise ValueError(
                "reward_weights must map reward names to numbers, e.g. "
                "{'correctness': 0.7, 'performance': 0.3}"
            )
        return RewardRule(weights={k: float(v) for k, v in reward_weights.items()})
    return RewardRule(key=reward_key)


def resolve_code_dir(spec: WorkflowSpec, code_dir: Path | str | None) -> Path | None:
    if not (spec.workflow or spec.grader):
        return None
    if code_dir is not None:
        return Path(code_dir).expanduser().resolve()
    return project_dir_of(spec.workflow or spec.grader or "")


def resolve_bundle(bundle: Path | str | None) -> Bundle | None:
    if bundle is None:
        return None
    wheel = Path(bundle).expanduser().resolve()
    match = _BUNDLE_NAME.match(wheel.name)
    if not wheel.is_file() or match is None:
        raise ValueError(
            f"bundle={wheel} must be an osmosis bundle wheel "
            "(osmosis_bundle_<digest>-...whl) built by osmosis-harbor"
        )
    return Bundle(wheel=wheel, package=match[1], digest=match[1][-16:])


#: The package ``osmosis rollout serve`` / ``eval run`` import a rollout folder's entrypoint
#: under (``osmosis_ai.rollout.entrypoint``: ``_osmosis_rollout_<hash>.main``). The bundle puts
#: the rollout folder itself on ``sys.path``, so there the module is plain ``main``.
_ENTRYPOINT_PACKAGE = re.compile(r"^_osmosis_rollout_[0-9a-f]+\.")


def _loaded_entrypoint_module(module_name: str) -> Any:
    """The module a rollout loader imported as ``_osmosis_rollout_<hash>.<module_name>``."""
    for name, module in list(sys.modules.items()):
        if _ENTRYPOINT_PACKAGE.match(name) and _ENTRYPOINT_PACKAGE.sub("", name) == module_name:
            return module
    return None


def module_import_name(module_name: str) -> str:
    """``__main__`` is the rollout's ``main.py`` on the host but a plain module in the sandbox,
    and so is an entrypoint the osmosis loader imported under its synthetic package."""
    if module_name != "__main__":
        return _ENTRYPOINT_PACKAGE.sub("", module_name)
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if not main_file:
        raise ValueError(
            "classes defined in an interactive session cannot be bundled; define them in a "
            "module of the rollout project"
        )
    return Path(main_file).stem


def import_path_of(obj: Any, what: str, base: type) -> str:
    if isinstance(obj, str):
        if ":" not in obj:
            raise ValueError(f"{what}={obj!r} must be a class or a 'module:Class' import path")
        from .runner import _import

        try:
            resolved = _import(obj)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"{what}={obj!r} cannot be imported: {exc}") from exc
        if not (isinstance(resolved, type) and issubclass(resolved, base)):
            raise TypeError(f"{what}={obj!r} must name a subclass of {base.__name__}")
        return obj
    if isinstance(obj, type) and issubclass(obj, base):
        return f"{module_import_name(obj.__module__)}:{obj.__qualname__}"
    raise TypeError(
        f"{what} must be a {base.__name__} subclass or a 'module:Class' import path; "
        f"got {type(obj).__name__}"
    )


def config_spec(config: Any, what: str, owner: str | None) -> dict[str, Any] | None:
    """How the sandbox rebuilds a config: by import path, or from its JSON dump."""
    if config is None:
        return None
    if isinstance(config, str):
        if ":" not in config:
            raise ValueError(f"{what}={config!r} must be a config object or 'module:attr'")
        return {"kind": "import", "path": config}
    candidates = [type(config).__module__]
    if owner:
        candidates.insert(0, owner.partition(":")[0])
    candidates.append("__main__")
    for module_name in candidates:
        module = sys.modules.get(module_name)
        for attr, value in vars(module).items() if module is not None else ():
            if value is config and not attr.startswith("_"):
                return {"kind": "import", "path": f"{module_import_name(module_name)}:{attr}"}
    dump = getattr(config, "model_dump", None)
    if not callable(dump):
        raise TypeError(f"{what} must be a config object (pydantic model) or 'module:attr'")
    try:
        data = dump(mode="json")
        json.dumps(data)
    except Exception as exc:
        raise ValueError(
            f"{what} holds values that cannot be sent to the sandbox ({exc}); define it at "
            f"module level and pass it as 'module:attr'"
        ) from exc
    cls = type(config)
    return {
        "kind": "json",
        "class": f"{module_import_name(cls.__module__)}:{cls.__qualname__}",
        "data": data,
    }


def project_dir_of(import_path: str) -> Path:
    """The directory that must be on ``sys.path`` for ``import_path`` to import."""
    module_name = import_path.partition(":")[0]
    if module_name == Path(getattr(sys.modules.get("__main__"), "__file__", "") or "").stem:
        module = sys.modules.get(module_name) or sys.modules.get("__main__")
    else:
        module = sys.modules.get(module_name) or _loaded_entrypoint_module(module_name)
    if module is None:
        import importlib

        module = importlib.import_module(module_name)
    module_file = getattr(module, "__file__", None)
    if not module_file:
        raise ValueError(f"cannot locate the source of {module_name!r}; pass code_dir=")
    path = Path(module_file).resolve()
    depth = len(module_name.split("."))
    if path.name == "__init__.py":
        depth += 1
    return path.parents[depth - 1]


def secret_values(value: Any, name: str = "") -> list[str]:
    """String values stored under key-like names (``api_key``, ``auth_token``...), recursively."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in secret_values(v, str(k))]
    if isinstance(value, list | tuple):
        return [s for item in value for s in secret_values(item, name)]
    if isinstance(value, str) and name and _SENSITIVE_NAME.search(name):
        return [value]
    return []
