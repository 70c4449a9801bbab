"""The task record of the reproducibility record: names, digests, base image, image digest.

Real task directories on disk; the record's trip through a real trial to the sample is covered
in test_native_agents.py, and through ``osmosis eval run`` / ``eval compare`` in
tests-integration/eval/test_eval_harbor_digests.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from osmosis_ai.rollout.backend.harbor._digests import task_name, task_record
from osmosis_ai.rollout.backend.harbor.tasks import TaskMode, select_task
from osmosis_ai.rollout.integrations.spi import files_digest


def _record(task: Path, tasks_dir: Path | None = None) -> dict[str, object]:
    root = tasks_dir or task
    source = select_task(mode=TaskMode.TEMPLATE, tasks_dir=root, metadata=None)
    if tasks_dir is not None:
        source = select_task(
            mode=TaskMode.DATASET,
            tasks_dir=tasks_dir,
            metadata={"harbor_task_id": task.relative_to(tasks_dir).as_posix()},
        )
    return task_record(source, task, root, "local")


def test_one_byte_of_the_verifier_changes_the_task_digest_not_the_image(
    hello_task: Path,
) -> None:
    before = _record(hello_task)
    assert before == {
        "name": "hello",
        "task_sha256": files_digest(hello_task),
        "dockerfile_sha256": hashlib.sha256(
            (hello_task / "environment" / "Dockerfile").read_bytes()
        ).hexdigest(),
        "base_image": "python:3.12-slim",
        "docker_image": None,
        "image_digest": None,  # the local sandbox builds no image: nothing is invented
        "environment": "local",
    }
    test_sh = hello_task / "tests" / "test.sh"
    test_sh.write_bytes(test_sh.read_bytes().replace(b"echo 1", b"echo 2", 1))
    after = _record(hello_task)
    assert after["task_sha256"] != before["task_sha256"]
    assert {k: v for k, v in after.items() if k != "task_sha256"} == {
        k: v for k, v in before.items() if k != "task_sha256"
    }


def test_caches_and_build_output_do_not_count(hello_task: Path) -> None:
    before = _record(hello_task)["task_sha256"]
    (hello_task / "tests" / "__pycache__").mkdir()
    (hello_task / "tests" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert _record(hello_task)["task_sha256"] == before


def test_base_image_follows_stage_aliases_and_arg_defaults(hello_task: Path) -> None:
    (hello_task / "environment" / "Dockerfile").write_text(
        "ARG PY=3.11\nFROM python:${PY}-slim AS build\nRUN true\n"
        "FROM build AS final\nFROM final\nWORKDIR /app\n"
    )
    assert _record(hello_task)["base_image"] == "python:3.11-slim"


def test_a_prebuilt_image_pinned_by_digest_is_the_image_digest(hello_task: Path) -> None:
    pinned = "ghcr.io/org/task@sha256:" + "ab" * 32
    toml = hello_task / "task.toml"
    toml.write_text(
        toml.read_text().replace("[environment]\n", f'[environment]\ndocker_image = "{pinned}"\n')
    )
    (hello_task / "environment" / "Dockerfile").unlink()
    record = _record(hello_task)
    assert record["docker_image"] == pinned
    assert record["image_digest"] == "sha256:" + "ab" * 32
    assert (record["dockerfile_sha256"], record["base_image"]) == (None, None)
    # an unpinned tag names the image but says nothing about its content
    toml.write_text(toml.read_text().replace(pinned, "ghcr.io/org/task:1"))
    assert _record(hello_task)["image_digest"] is None


def test_task_names_carry_no_machine_specific_path(
    tmp_path: Path, make_task: Callable[..., Path]
) -> None:
    tasks_dir = tmp_path / "dataset"
    nested = make_task(tasks_dir / "group" / "one")
    assert _record(nested, tasks_dir)["name"] == "group/one"
    elsewhere = make_task(tmp_path / "elsewhere" / "two")
    override = select_task(
        mode=TaskMode.DATASET, tasks_dir=tasks_dir, metadata={"harbor_task": str(elsewhere)}
    )
    assert task_name(override, tasks_dir) == "two"
    package = select_task(
        mode=TaskMode.TEMPLATE, tasks_dir=tasks_dir, metadata={"harbor_task": "org/name@v1"}
    )
    assert task_name(package, tasks_dir) == "org/name@v1"
