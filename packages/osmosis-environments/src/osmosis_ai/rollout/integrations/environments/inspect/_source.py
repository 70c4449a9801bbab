"""``SOURCE`` for ``inspect:``: load an Inspect task as an :class:`Environment`, list tasks."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.environments import (
    Environment,
    EnvironmentInfo,
    EnvironmentSpec,
    EnvironmentSpecError,
)
from osmosis_ai.rollout.optional_imports import install_hint

for _module in ("inspect_ai", "openai"):  # openai: Inspect's provider for the policy endpoint
    if importlib.util.find_spec(_module) is None:
        raise ModuleNotFoundError(
            f"The 'inspect' environment source needs {_module}: {install_hint('inspect')}",
            name=_module,
        )

if TYPE_CHECKING:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample

#: Spec options that configure the adapter rather than the task's arguments.
MODEL_OPTION = "osmosis_model"


def check_sandboxes(task: Task, samples: Iterable[Sample]) -> bool:
    """Whether the task runs samples in a sandbox (Harbor's local sandbox, see ``_sandbox``);
    raises, naming the task or sample and what to do, for a sandbox osmosis cannot run."""
    from ._sandbox import require_local_sandbox, sample_sandbox, task_sandbox

    sandboxed = task_sandbox(task) is not None
    for sample in samples:
        sandboxed = sample_sandbox(task, sample).sandbox is not None or sandboxed
        if (sample.files or sample.setup) and not sandboxed:
            raise EnvironmentSpecError(
                f"Sample {sample.id!r} of Inspect task {task.name!r} has files or a setup "
                "script but the task names no sandbox to put them in; give the task "
                "sandbox='local' (or 'docker')."
            )
    if sandboxed:
        require_local_sandbox()
    return sandboxed


def sample_row(sample: Sample) -> dict[str, Any]:
    """One Inspect sample as an osmosis dataset row (messages mode, the sample in metadata)."""
    import json

    if isinstance(sample.input, str):
        messages = [{"role": "user", "content": sample.input}]
    else:
        messages = [{"role": m.role, "content": m.text} for m in sample.input]
    target = sample.target
    return {
        "messages": messages,
        "ground_truth": target if isinstance(target, str) else json.dumps(target),
        "metadata": {"inspect_sample": sample.model_dump(mode="json", exclude_none=True)},
    }


def _absolute(task: str) -> str:
    """``FILE.py@TASK`` with an absolute file, so a server started elsewhere finds it."""
    file, at, name = task.rpartition("@")
    if at and file.endswith(".py") and Path(file).is_file():
        return f"{Path(file).resolve()}@{name}"
    return task


class InspectSource:
    """``inspect:<file.py>@<task>`` (or a registered task such as ``inspect_evals/gsm8k``)."""

    def load(self, spec: EnvironmentSpec) -> Environment:
        from ._run import InspectGrader, InspectTaskConfig, InspectWorkflow, load_task

        options = dict(spec.options)
        model_name = options.pop(MODEL_OPTION, "osmosis-rollout")
        config = InspectTaskConfig(
            name=f"inspect:{spec.name}",
            task=_absolute(spec.name),
            task_args=options,
            model_name=model_name,
        )
        task = load_task(config.task, config.task_arg_values)
        samples = list(task.dataset)
        sandboxed = check_sandboxes(task, samples)
        for index, sample in enumerate(samples, start=1):
            if sample.id is None:
                sample.id = index  # what Inspect's own eval assigns
        return Environment(
            # the file made absolute: a rollout server started in another folder loads the same
            spec=EnvironmentSpec(spec.source, config.task, spec.options),
            workflow=InspectWorkflow,
            grader=InspectGrader,
            rows=[sample_row(sample) for sample in samples],
            workflow_config=config,
            grader_config=config.for_grader(),
            metrics=tuple(config.scorer_names(task)),
            description=f"Inspect task {task.name} ({len(samples)} samples"
            + (", in Harbor's local sandbox)" if sandboxed else ")"),
        )

    def list(self, path: str | Path = ".") -> Iterable[EnvironmentInfo]:
        """The tasks Inspect finds in ``path`` (a file, directory or glob; read, not run)."""
        from inspect_ai import list_tasks

        where, cwd = Path(path).resolve(), Path.cwd().resolve()
        inside = where.is_relative_to(cwd)
        root = cwd if inside else where if where.is_dir() else where.parent
        globs = [] if where == root else [where.relative_to(root).as_posix()]
        return [
            EnvironmentInfo(spec=f"inspect:{info.file}@{info.name}", description=info.name)
            for info in list_tasks(globs, root_dir=root, absolute=not inside)
        ]


SOURCE = InspectSource()
