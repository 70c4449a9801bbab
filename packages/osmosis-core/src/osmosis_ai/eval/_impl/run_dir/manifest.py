"""The run manifest: the inputs a run is locked to, so that resuming never mixes results.

Why: a rerun with the same ``--name`` resumes the missing work items. That is only honest if
every input that can change a reward is unchanged: the model and its endpoint, the dataset
bytes and the selected rows, the samples per row, the rollout's source code and entrypoint,
its environment, secret *names* (never values) and timeouts. A changed input is refused with
the names of the groups that changed, and ``--fresh`` starts over.

Deliberately *not* locked: the run name, the output path, ``--max-in-flight`` and
``--pass-threshold`` (metrics are recomputed from the journal), timestamps, CLI versions.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from osmosis_ai.atomic_file import write_atomic
from osmosis_ai.errors import EvalError
from osmosis_ai.rollout.project_files import files_digest

SCHEMA_VERSION = 1
#: Bumped whenever the meaning of a journal record or of the locked inputs changes.
LOCK_VERSIONS = {"rollout_protocol": "0.4", "dataset_normalization": 1, "state_schema": 1}


class ManifestError(EvalError, ValueError):
    """The run manifest is unreadable or malformed; ``--fresh`` archives the run."""


class ManifestMismatchError(ManifestError):
    """The run's locked inputs differ from this invocation's; ``changed`` names the groups."""

    def __init__(self, run_name: str, changed: list[str], *, note: str | None = None) -> None:
        self.changed = changed
        if note is None and changed == ["rollout"]:
            note = (
                "The rollout's code changed: add --retry-failed --allow-changed to retry the "
                "failed work items on the new code (the passing ones keep their results)."
            )
        super().__init__(
            f"run {run_name!r} was started with different inputs; changed: "
            f"{', '.join(changed)}.{f' {note}' if note else ''} Rerun with the original inputs "
            "to resume, pass --fresh to archive it and start over, or choose another --name"
        )


def source_digest(root: Path, *, exclude: tuple[Path, ...] = ()) -> str:
    """sha256 over the relative paths and bytes of the rollout's source files.

    The files are :func:`~osmosis_ai.rollout.project_files.files_digest`'s, less
    ``uv.lock`` and the eval output: they change without the rollout's behaviour changing.
    """
    return files_digest(root, exclude=exclude, skip_names=("uv.lock",))


def inputs_digest(inputs: dict[str, Any]) -> str:
    """Stable digest of the locked inputs (used in generated run names)."""
    return hashlib.sha256(_canonical(inputs).encode()).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def changed_groups(locked: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Top-level input groups whose values differ (``dataset``, ``model``, ``rollout``...)."""
    keys = sorted(set(locked) | set(current))
    return [k for k in keys if _canonical(locked.get(k)) != _canonical(current.get(k))]


def write_manifest(
    path: Path,
    run_name: str,
    inputs: dict[str, Any],
    provenance: dict[str, Any],
    reproducibility: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Create the manifest of a new run (atomically: temp file, fsync, rename).

    ``reproducibility`` (:mod:`osmosis_ai.eval._impl.results.reproducibility`) is not locked: it is updated at the end of each session.
    """
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "local_run_id": uuid.uuid4().hex,
        "run_name": run_name,
        "created_at": datetime.now(UTC).isoformat(),
        "inputs": inputs,
        "provenance": provenance,
    }
    if reproducibility is not None:
        manifest["reproducibility"] = reproducibility
    write_json_atomic(path, manifest)
    return manifest


def read_manifest(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ManifestError(
            f"run manifest {path} is unreadable ({exc}); pass --fresh to archive the run"
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), dict):
        raise ManifestError(f"run manifest {path} is malformed; pass --fresh to archive the run")
    return data


def check_manifest(manifest: dict[str, Any], run_name: str, inputs: dict[str, Any]) -> None:
    """Raise :class:`ManifestMismatchError` unless ``inputs`` equal the locked inputs."""
    changed = changed_groups(manifest["inputs"], inputs)
    if changed:
        raise ManifestMismatchError(run_name, changed)


def write_json_atomic(path: Path, data: Any) -> None:
    """Readers see the old or the new file, never half of one."""
    write_atomic(path, json.dumps(data, indent=2, allow_nan=False) + "\n", durable=True)
