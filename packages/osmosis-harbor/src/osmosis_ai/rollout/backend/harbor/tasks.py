"""Which Harbor task a rollout runs, and its per-rollout copy.

Every rollout gets its own copy of its task ("materialized" under the backend's work dir) so
that writing the prompt into ``instruction.md`` or adding the SDK grader's verifier never
touches the user's task directory and concurrent rollouts never see each other's changes.

Selection rules:

- ``template`` mode: every rollout runs ``tasks_dir`` itself; a non-empty prompt replaces the
  task's ``instruction.md``.
- ``dataset`` mode: the rollout runs ``tasks_dir / metadata["harbor_task_id"]`` with the task's
  own instruction (the prompt is not written).
- Either mode: ``metadata["harbor_task"]`` overrides the task for one rollout. It is a local path
  (``/abs``, ``~/x`` or ``./rel``, relative paths resolve against ``tasks_dir``), a registry
  package ``org/name[@ref]``, or, together with ``metadata["git_url"]`` (and ideally
  ``metadata["git_commit_id"]``), a path inside a git repository.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from osmosis_ai.errors import ConfigurationError

logger = logging.getLogger(__name__)

_PACKAGE_REF = re.compile(
    r"^(?P<org>[A-Za-z0-9][\w.-]*)/(?P<name>[A-Za-z0-9][\w.-]*)(?:@(?P<ref>\S+))?$"
)


class TaskMode(StrEnum):
    """How a rollout's task is chosen (see the module docs)."""

    TEMPLATE = "template"
    DATASET = "dataset"


class TaskSelectionError(ConfigurationError):
    """The request does not name a usable task; the message says what to fix."""


@dataclass(frozen=True, slots=True)
class TaskSource:
    """Where a rollout's task comes from before it is materialized."""

    kind: str  # "local" | "package" | "git"
    path: Path | None = None
    org: str | None = None
    name: str | None = None
    ref: str | None = None
    git_url: str | None = None
    git_commit_id: str | None = None

    @property
    def description(self) -> str:
        if self.kind == "package":
            return f"{self.org}/{self.name}@{self.ref or 'latest'}"
        if self.kind == "git":
            return f"{self.git_url}@{self.git_commit_id or 'HEAD'}:{self.path}"
        return str(self.path)


def _safe_relative(value: str, what: str) -> PurePosixPath:
    rel = PurePosixPath(value)
    if not value or rel.is_absolute() or ".." in rel.parts or value.startswith("~"):
        raise TaskSelectionError(
            f"{what} must be a relative path inside tasks_dir without '..'; got {value!r}"
        )
    return rel


def select_task(*, mode: TaskMode, tasks_dir: Path, metadata: dict[str, Any] | None) -> TaskSource:
    """Decide which task a request runs (no I/O beyond path checks)."""
    meta = metadata or {}
    override = meta.get("harbor_task")
    if override is not None:
        if not isinstance(override, str) or not override.strip():
            raise TaskSelectionError(
                "metadata['harbor_task'] must be a non-empty string: a local path, "
                "'org/name@ref', or a path inside the repository named by metadata['git_url']"
            )
        return _parse_override(override.strip(), tasks_dir, meta)
    if mode is TaskMode.TEMPLATE:
        return TaskSource(kind="local", path=tasks_dir)
    task_id = meta.get("harbor_task_id")
    if not isinstance(task_id, str) or not task_id:
        raise TaskSelectionError(
            "dataset mode needs metadata['harbor_task_id'] naming a task directory under "
            f"{tasks_dir} (or metadata['harbor_task'] naming a task elsewhere)"
        )
    return TaskSource(kind="local", path=tasks_dir / _safe_relative(task_id, "harbor_task_id"))


def _parse_override(value: str, tasks_dir: Path, meta: dict[str, Any]) -> TaskSource:
    git_url = meta.get("git_url")
    if git_url:
        commit = meta.get("git_commit_id")
        if not commit:
            logger.warning(
                "metadata['git_url'] without metadata['git_commit_id']: the task follows the "
                "repository's default branch and rollouts are not reproducible"
            )
        return TaskSource(
            kind="git",
            path=Path(_safe_relative(value, "metadata['harbor_task'] (a path in the repo)")),
            git_url=str(git_url),
            git_commit_id=str(commit) if commit else None,
        )
    if value.startswith(("/", "~", "./", "../")) or value == ".":
        path = Path(value).expanduser()
        return TaskSource(kind="local", path=path if path.is_absolute() else tasks_dir / path)
    match = _PACKAGE_REF.match(value)
    if match is None:
        raise TaskSelectionError(
            f"metadata['harbor_task']={value!r} is neither a local path (start it with '/', "
            "'~' or './') nor a registry package 'org/name[@ref]'"
        )
    ref = match["ref"]
    if ref in (None, "latest"):
        logger.warning(
            "harbor task %s uses the mutable 'latest' ref; pin a revision, tag or "
            "sha256 digest for reproducible rollouts",
            value,
        )
    return TaskSource(kind="package", org=match["org"], name=match["name"], ref=ref)


async def fetch_task(source: TaskSource) -> Path:
    """A local directory holding the task (downloads registry and git tasks with Harbor)."""
    if source.kind == "local":
        assert source.path is not None
        path = source.path
        if not (path / "task.toml").is_file() and not (path / "instruction.md").is_file():
            raise TaskSelectionError(
                f"{path} is not a Harbor task directory (no task.toml or instruction.md)"
            )
        return path
    from harbor.models.task.id import GitTaskId, PackageTaskId
    from harbor.tasks.client import TaskClient

    task_id: GitTaskId | PackageTaskId
    if source.kind == "package":
        task_id = PackageTaskId(org=source.org or "", name=source.name or "", ref=source.ref)
    else:
        task_id = GitTaskId(
            git_url=source.git_url or "",
            git_commit_id=source.git_commit_id,
            path=source.path or Path("."),
        )
    from .bundle import osmosis_cache_dir

    try:
        result = await TaskClient().download_tasks(
            [task_id], output_dir=osmosis_cache_dir() / "harbor-tasks"
        )
    except Exception as exc:
        raise TaskSelectionError(
            f"could not fetch harbor task {source.description}: {exc}"
        ) from exc
    return result.paths[0]


def render_instruction(prompt: list[dict[str, Any]]) -> str:
    """The prompt as the task instruction: one message's text as is, otherwise JSON messages."""
    if len(prompt) == 1 and isinstance(prompt[0].get("content"), str):
        return str(prompt[0]["content"])
    return json.dumps(prompt, ensure_ascii=False, indent=2)


def materialize_task(source_dir: Path, target_dir: Path) -> Path:
    """Copy a task into ``target_dir``; symlinks are rejected (they could escape the task)."""
    for root, dirs, files in os.walk(source_dir):
        for entry in (*dirs, *files):
            candidate = Path(root) / entry
            if candidate.is_symlink():
                raise TaskSelectionError(
                    f"task {source_dir} contains a symlink ({candidate.relative_to(source_dir)}); "
                    "replace it with a regular file or directory"
                )
    shutil.copytree(source_dir, target_dir)
    return target_dir


def task_steps(task_dir: Path) -> list[str]:
    """The step names of a multi-step task (``[[steps]]`` in ``task.toml``), else ``[]``.

    Harbor runs such a task step by step (each step's ``steps/<name>/instruction.md``, agent run
    and verifier) and combines the steps' rewards (``multi_step_reward_strategy``: the per-key
    mean by default, or the final step's); the task needs no top-level ``instruction.md``.
    """
    import tomllib

    try:
        data = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    steps = data.get("steps")
    if not isinstance(steps, list):
        return []
    return [str(step.get("name")) for step in steps if isinstance(step, dict)]


def _has_test_script(tests: Path) -> bool:
    return (tests / "test.sh").is_file() or (tests / "test.bat").is_file()


def task_has_verifier(task_dir: Path) -> bool:
    """A task's own verifier script wins over ``grader=`` (reward precedence); a multi-step
    task's are its steps' (``steps/<name>/tests/``) or the shared top-level one."""
    if _has_test_script(task_dir / "tests"):
        return True
    return any(
        _has_test_script(task_dir / "steps" / name / "tests") for name in task_steps(task_dir)
    )
