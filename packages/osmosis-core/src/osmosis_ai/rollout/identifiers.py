"""Rollout id rules.

A rollout id names a folder (``<home>/<rollout_id>/``) and a URL path segment, so it must be
one safe path segment.
"""

from __future__ import annotations

ROLLOUT_ID_RULE = (
    "rollout_id must be a single path segment (no path separators, and not '.' or '..')"
)


def is_valid_rollout_id(rollout_id: str) -> bool:
    return (
        bool(rollout_id)
        and rollout_id not in {".", ".."}
        and "/" not in rollout_id
        and "\\" not in rollout_id
        and "\x00" not in rollout_id
    )


def validate_rollout_id(rollout_id: str) -> str:
    """Return ``rollout_id`` unchanged, or raise ``ValueError`` saying what a valid id is."""
    if not isinstance(rollout_id, str) or not is_valid_rollout_id(rollout_id):
        raise ValueError(ROLLOUT_ID_RULE)
    return rollout_id
