"""What a rollout's Harbor task and image were, for the reproducibility record (issue 15).

:func:`task_record` describes the task a rollout ran, before the per-rollout copy changed it
(template mode writes the prompt into ``instruction.md``; the SDK grader adds a verifier):

- ``name``: the task as the request chose it (``tasks_dir``'s name in template mode, the
  ``harbor_task_id`` in dataset mode, a path's name, ``org/name@ref`` or ``git_url@commit:path``);
- ``task_sha256``: the content digest of the task directory (the project-file walker's files,
  sorted; sha256 over relative paths and bytes: :func:`files_digest`);
- ``dockerfile_sha256`` and ``base_image``: the bytes of ``environment/Dockerfile`` and its final
  stage's ``FROM`` (stage aliases resolved, ``ARG`` defaults substituted), ``null`` without one;
- ``docker_image``: the prebuilt image ``task.toml`` names (``[environment] docker_image``);
- ``image_digest``: the image's content digest when it is known: Harbor's environments report
  no image id, so it is the ``@sha256:`` pin of ``docker_image`` or ``null`` (the local sandbox
  builds no image at all), never a guess;
- ``environment``: where the trial ran (``local``, ``docker``, ``skypilot``, ...).

:func:`attach` puts the record into the samples under ``extra_fields["harbor_task"]``: the
sample is what reaches the controller over the rollout protocol (an opaque object in 0.3.8), so
an ``osmosis eval run`` sees it for local and remote rollout servers alike.
"""

from __future__ import annotations

import hashlib
import logging
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_ai.rollout.integrations.spi import files_digest

from .tasks import TaskSource

if TYPE_CHECKING:
    from osmosis_ai.rollout.types.execution import ExecutionOutcome

logger = logging.getLogger(__name__)

#: The sample ``extra_fields`` key holding the record (read by ``osmosis eval``).
SAMPLE_KEY = "harbor_task"


def task_name(source: TaskSource, tasks_dir: Path) -> str:
    """How the request named its task (stable across machines: no absolute paths)."""
    if source.kind != "local" or source.path is None:
        return source.description
    path = source.path
    if path == tasks_dir:
        return tasks_dir.name
    try:
        return path.relative_to(tasks_dir).as_posix()
    except ValueError:
        return path.name


def task_record(
    source: TaskSource, source_dir: Path, tasks_dir: Path, environment: str
) -> dict[str, Any]:
    """The record of one task (blocking: reads the whole task directory)."""
    dockerfile = source_dir / "environment" / "Dockerfile"
    docker_image = _docker_image(source_dir / "task.toml")
    record: dict[str, Any] = {
        "name": task_name(source, tasks_dir),
        "task_sha256": files_digest(source_dir),
        "dockerfile_sha256": None,
        "base_image": None,
        "docker_image": docker_image,
        "image_digest": _pinned_digest(docker_image),
        "environment": environment,
    }
    if dockerfile.is_file():
        record["dockerfile_sha256"] = hashlib.sha256(dockerfile.read_bytes()).hexdigest()
        record["base_image"] = final_base_image(dockerfile)
    return record


def _docker_image(toml: Path) -> str | None:
    try:
        data = tomllib.loads(toml.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    image = (data.get("environment") or {}).get("docker_image")
    return image if isinstance(image, str) and image else None


def _pinned_digest(image: str | None) -> str | None:
    if image and "@sha256:" in image:
        return "sha256:" + image.rsplit("@sha256:", 1)[1]
    return None


def final_base_image(dockerfile: Path) -> str | None:
    """The image the Dockerfile's final stage starts from (through stage aliases)."""
    from dockerfile_parse import DockerfileParser

    try:
        parser = DockerfileParser(path=str(dockerfile))
        parents = [str(p) for p in parser.parent_images]
        froms = [str(i["value"]).split() for i in parser.structure if i["instruction"] == "FROM"]
    except Exception:  # a Dockerfile the parser cannot read: the digest still identifies it
        logger.debug("could not parse %s", dockerfile, exc_info=True)
        return None
    aliases: dict[str, str] = {}
    for image, words in zip(parents, froms, strict=False):
        words = [w for w in words if not w.startswith("--")]
        if len(words) >= 3 and words[1].lower() == "as":
            aliases[words[2]] = image
    image = parents[-1] if parents else None
    seen: set[str] = set()
    while image in aliases and image not in seen:
        seen.add(image)
        image = aliases[image]
    return image


def attach(outcome: ExecutionOutcome, record: dict[str, Any] | None) -> None:
    """Add ``record`` to every sample of ``outcome`` (the workflow's and the grader's)."""
    if record is None:
        return
    for result in (outcome.workflow, outcome.grader):
        sample = result.sample if result is not None else None
        if sample is not None:
            sample.extra_fields = {**sample.extra_fields, SAMPLE_KEY: dict(record)}
