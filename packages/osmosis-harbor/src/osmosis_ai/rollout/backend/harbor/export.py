"""Export an osmosis rollout + dataset as Harbor tasks (one task folder per row).

Each folder is a plain Harbor task that any Harbor agent can attempt (``harbor run``):

- ``instruction.md``: the row's prompt (one message's text as is, else the messages as JSON);
- ``task.toml``: schema 1.3 with the row's index, label and metadata under ``[metadata.osmosis]``;
- ``environment/Dockerfile``: a Python image with ``uv`` and the rollout project's dependencies;
- ``tests/test.sh``: the verifier HarborBackend generates for SDK graders: it installs the rollout
  bundle (the project as a wheel, in ``tests/osmosis/``) and runs the rollout's ``Grader`` on
  what the agent left (the osmosis workflow's result, or a native agent's ATIF trajectory),
  writing Harbor's ``reward.json``;
- ``solution/solve.sh`` (with ``solution=``): a reference answer as the workflow's result, so
  Harbor's ``oracle`` agent checks the task and its verifier end to end.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.rollout.types.execution import ExecutionRequest

from . import _sandbox_paths as paths
from ._config import resolve_agent, resolve_code_dir
from ._trial import install_sdk_verifier
from .bundle import build_bundle, project_dependencies
from .tasks import render_instruction

DEFAULT_IMAGE = "python:3.12-slim"
_HEREDOC = "OSMOSIS_SOLUTION_EOF"


@dataclass(frozen=True, slots=True)
class HarborTaskRow:
    """One dataset row: the prompt messages, the label and metadata (as ``DatasetRow`` has)."""

    initial_messages: list[dict[str, Any]]
    label: str | None = None
    metadata: dict[str, Any] | None = None


def export_harbor_tasks(
    rows: Iterable[HarborTaskRow | Any],
    out_dir: Path | str,
    *,
    workflow: type | str,
    grader: type | str,
    workflow_config: Any = None,
    grader_config: Any = None,
    code_dir: Path | str | None = None,
    solution: str | None = None,
    image: str = DEFAULT_IMAGE,
    bake_dependencies: bool = True,
    name: str = "task",
) -> list[Path]:
    """Write one Harbor task per row under ``out_dir``; returns the task folders.

    ``rows`` are objects with ``initial_messages``, ``label`` and ``metadata`` (such as
    ``osmosis_ai.eval.DatasetRow``). ``solution`` is a reference answer template
    (``str.format`` with ``label`` and the row's ``metadata`` keys), e.g. ``"#### {label}"``.
    The grader runs from the rollout project (``code_dir``, default: the directory its module
    imports from), bundled once for all tasks. ``bake_dependencies=False`` leaves the image
    as ``image`` (the verifier then installs the project's dependencies, which needs the network
    or an image that has them). Refuses a non-empty ``out_dir``.
    """
    out = Path(out_dir).expanduser().resolve()
    if out.exists() and any(out.iterdir()):
        raise ConfigurationError(f"{out} is not empty; export into a new or empty directory.")
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
        raise ConfigurationError(f"task name {name!r}: use lower-case letters, digits, '.-_'.")
    _native, spec = resolve_agent(workflow, None, workflow_config, grader, grader_config)
    project = resolve_code_dir(spec, code_dir)
    assert project is not None  # the spec names a grader
    bundle = build_bundle(project, spec.as_json(), exclude=(out,))
    dockerfile = _dockerfile(image, project_dependencies(project) if bake_dependencies else None)
    written: list[Path] = []
    for index, row in enumerate(rows):
        task_name = f"{name}-{index:04d}"
        task_dir = out / task_name
        prompt = list(row.initial_messages)
        (task_dir / "environment").mkdir(parents=True)
        (task_dir / "environment" / "Dockerfile").write_text(dockerfile)
        (task_dir / "instruction.md").write_text(render_instruction(prompt) + "\n")
        (task_dir / "task.toml").write_text(_task_toml(task_name, index, row))
        request = ExecutionRequest(
            id=task_name, prompt=prompt, label=row.label, metadata=row.metadata
        )
        install_sdk_verifier(task_dir, request, bundle)
        if solution is not None:
            answer = solution.format(label=row.label or "", **(row.metadata or {}))
            _write_solution(task_dir, prompt, answer)
        written.append(task_dir)
    if not written:
        shutil.rmtree(out, ignore_errors=True)
        raise ConfigurationError("the dataset has no rows to export")
    return written


def _dockerfile(image: str, dependencies: list[str] | None) -> str:
    lines = [f"FROM {image}"]
    if dependencies is not None:
        deps = " ".join(json.dumps(dep) for dep in ["uv", *dependencies])
        lines += [
            "# The verifier installs the rollout bundle (tests/osmosis/*.whl) with uv; its",
            "# dependencies are installed here so grading needs no network.",
            f"RUN pip install --no-cache-dir {deps}",
        ]
    return "\n".join([*lines, "WORKDIR /app", ""])


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _task_toml(task_name: str, index: int, row: Any) -> str:
    meta = json.dumps(row.metadata, ensure_ascii=False, sort_keys=True) if row.metadata else ""
    lines = [
        'schema_version = "1.3"',
        "",
        "[task]",
        f"name = {_toml_string('osmosis/' + task_name)}",
        'description = "An osmosis rollout row exported as a Harbor task"',
        "",
        "[metadata.osmosis]",
        f"row = {index}",
        *([f"label = {_toml_string(row.label)}"] if row.label is not None else []),
        *([f"metadata_json = {_toml_string(meta)}"] if meta else []),
        "",
        "[environment]",
        'workdir = "/app"',
        "",
        "[agent]",
        "timeout_sec = 600",
        "",
        "[verifier]",
        "timeout_sec = 600",
        "",
    ]
    return "\n".join(lines)


def _write_solution(task_dir: Path, prompt: list[dict[str, Any]], answer: str) -> None:
    result = {
        "status": "success",
        "sample": {"messages": [*prompt, {"role": "assistant", "content": answer}]},
    }
    script = (
        "#!/bin/bash\n"
        "# Generated by osmosis: the reference answer, as the rollout workflow's result.\n"
        "set -e\n"
        f'mkdir -p "$(dirname {paths.AGENT_RESULT})"\n'
        f"cat > {paths.AGENT_RESULT} <<'{_HEREDOC}'\n"
        f"{json.dumps(result, ensure_ascii=False)}\n"
        f"{_HEREDOC}\n"
    )
    solve = task_dir / "solution" / "solve.sh"
    solve.parent.mkdir(parents=True)
    solve.write_text(script)
    solve.chmod(0o755)


__all__ = ["DEFAULT_IMAGE", "HarborTaskRow", "export_harbor_tasks"]
