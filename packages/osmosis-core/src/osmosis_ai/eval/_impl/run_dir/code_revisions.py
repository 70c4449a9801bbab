"""``--retry-failed --allow-changed``: retry failed work items on changed rollout code.

Why: after fixing a bug in the workflow, the passing rows need not run again; only the failed
ones do. The run's manifest then records every revision of the rollout's code it ran on
(``code_revisions``: source digest, entrypoint, since when) and, after each session, which
work items' current results came from which revision (``work_items``: ``[row, sample]``
pairs, from the journal's ``code_digest``; records written before the first change belong to
the first revision). Only the ``rollout`` input group may change this way: another model,
dataset or selection would make the results incomparable, so those stay refused.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from osmosis_ai.eval._impl.run_dir.manifest import (
    ManifestMismatchError,
    changed_groups,
    write_json_atomic,
)

_FINISHED = frozenset({"success", "failed", "skipped"})


def adopt_changed_code(
    manifest: dict[str, Any], path: Path, run_name: str, inputs: dict[str, Any]
) -> tuple[str, str] | None:
    """Accept a changed ``rollout`` group into the manifest, recording the revision.

    Returns ``(old_digest, new_digest)`` when the code changed, ``None`` when nothing did;
    raises :class:`ManifestMismatchError` when any other input group changed.
    """
    changed = changed_groups(manifest["inputs"], inputs)
    if not changed:
        return None
    if changed != ["rollout"]:
        raise ManifestMismatchError(
            run_name, changed, note="--allow-changed covers only the rollout's code."
        )
    old = manifest["inputs"]["rollout"]
    revisions = manifest.setdefault("code_revisions", [_revision(old, manifest["created_at"])])
    revisions.append(_revision(inputs["rollout"], datetime.now(UTC).isoformat()))
    manifest["inputs"]["rollout"] = inputs["rollout"]
    write_json_atomic(path, manifest)
    return str(old["source_digest"]), str(inputs["rollout"]["source_digest"])


def record_work_items(
    manifest: dict[str, Any], path: Path, latest: dict[tuple[int, int], dict[str, Any]]
) -> None:
    """Fill each revision's ``work_items`` from the journal (no-op for a run never changed)."""
    revisions: list[dict[str, Any]] | None = manifest.get("code_revisions")
    if not revisions:
        return
    last_index = {rev["source_digest"]: i for i, rev in enumerate(revisions)}
    items: list[list[list[int]]] = [[] for _ in revisions]
    first = revisions[0]["source_digest"]
    for key, record in sorted(latest.items()):
        if record.get("status") in _FINISHED:
            index = last_index.get(record.get("code_digest") or first, 0)
            items[index].append([key[0], key[1]])
    for revision, keys in zip(revisions, items, strict=True):
        revision["work_items"] = keys
    write_json_atomic(path, manifest)


def _revision(rollout: dict[str, Any], since: str) -> dict[str, Any]:
    return {
        "source_digest": rollout["source_digest"],
        "entrypoint": rollout.get("entrypoint"),
        "since": since,
        "work_items": [],
    }
