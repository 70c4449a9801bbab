"""Rollout id rules.

A rollout id names a folder (``<home>/<rollout_id>/``), a URL path segment and appears in
server log lines, so it must be one safe path segment without control characters. The path
rule is osmosis-ai 0.3.8's; control characters (0.3.8 accepted them) are refused because a
newline in an id could forge a server log line (see ``docs/decisions.md``).
"""

from __future__ import annotations

import unicodedata

ROLLOUT_ID_RULE = (
    "rollout_id must be a single path segment (no path separators, and not '.' or '..')"
)
ROLLOUT_ID_CONTROL_RULE = (
    "rollout_id must not contain control characters (such as a newline or a tab); "
    "use letters, digits and punctuation"
)


def is_valid_rollout_id(rollout_id: str) -> bool:
    return _problem(rollout_id) is None


def validate_rollout_id(rollout_id: str) -> str:
    """Return ``rollout_id`` unchanged, or raise ``ValueError`` saying what a valid id is."""
    if not isinstance(rollout_id, str):
        raise ValueError(ROLLOUT_ID_RULE)
    problem = _problem(rollout_id)
    if problem is not None:
        raise ValueError(problem)
    return rollout_id


def _problem(rollout_id: str) -> str | None:
    if (
        not rollout_id
        or rollout_id in {".", ".."}
        or "/" in rollout_id
        or "\\" in rollout_id
        or "\x00" in rollout_id
    ):
        return ROLLOUT_ID_RULE
    # isprintable() is the fast common case; only a non-printable id is checked character by
    # character (other non-printables, such as a no-break space, are allowed).
    if not rollout_id.isprintable() and any(
        unicodedata.category(char) == "Cc" for char in rollout_id
    ):
        return ROLLOUT_ID_CONTROL_RULE
    return None
