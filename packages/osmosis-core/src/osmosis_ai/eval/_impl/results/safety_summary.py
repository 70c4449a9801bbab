"""The run-level training-safety summary (``metrics.json`` ``summary.training_safety``, console).

Reads the per-row verdicts :func:`osmosis_ai.eval.check_append_only` produced (their JSON form,
as stored in each :class:`~osmosis_ai.eval.RowRecord`'s ``training_safety``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def verdict_cause(verdict: Mapping[str, Any] | None) -> str | None:
    """``"ok"`` (append-only), the cause that breaks it, or ``None`` (no verdict: not checked)."""
    if not verdict:
        return None
    if verdict.get("append_only") is not False:
        return "ok"
    return (verdict.get("divergence") or {}).get("cause") or "token_mismatch"


def summarize_training_safety(
    verdicts: Iterable[Mapping[str, Any] | None], *, token_ids_requested: bool | None = None
) -> dict[str, Any]:
    """The ``training_safety`` block of ``metrics.json`` from per-row verdicts (``to_json``).

    Rows without a verdict (no policy call recorded, or written by an older version) are not
    counted as rollouts. ``token_ids_requested`` is whether the run asked the upstream for
    token ids (``--token-ids``); ``None``: not known (an older run), not stored.
    """
    totals = TrainingSafetyTotals()
    for verdict in verdicts:
        totals.add(verdict)
    return totals.summary(token_ids_requested=token_ids_requested)


class TrainingSafetyTotals:
    """:func:`summarize_training_safety` one verdict at a time (running counts only)."""

    __slots__ = ("broken", "causes", "checked", "truncated", "with_ids")

    def __init__(self) -> None:
        self.checked = self.broken = self.with_ids = self.truncated = 0
        self.causes: dict[str, int] = {}

    def add(self, verdict: Mapping[str, Any] | None) -> None:
        cause = verdict_cause(verdict)
        if verdict is None or cause is None:
            return
        self.checked += 1
        if verdict.get("token_ids") == "all":
            self.with_ids += 1
        if verdict.get("truncated_calls"):
            self.truncated += 1
        if cause != "ok":
            self.broken += 1
            self.causes[cause] = self.causes.get(cause, 0) + 1

    def summary(self, *, token_ids_requested: bool | None = None) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "rollouts": self.checked,
            "append_only": self.checked - self.broken,
            "broken": self.broken,
            "causes": dict(sorted(self.causes.items(), key=lambda kv: (-kv[1], kv[0]))),
            "token_ids_rows": self.with_ids,
            "length_truncated_rows": self.truncated,
        }
        if token_ids_requested is not None:
            summary["token_ids_requested"] = token_ids_requested
        return summary


def missing_token_ids_reason(summary: Mapping[str, Any]) -> str | None:
    """Why no row carries token ids (``None`` when some do): not asked for, or asked for and
    the upstream returned none. The console and the report both say this."""
    if summary.get("token_ids_rows"):
        return None
    if summary.get("token_ids_requested"):
        return (
            "requested with --token-ids, but the upstream returned none (vLLM returns them; "
            "most other servers do not)"
        )
    return "not requested: enable with --token-ids (vLLM)"


def describe_training_safety(summary: Mapping[str, Any]) -> str:
    """One console line, e.g. ``196/200 rollouts append-only; 4 break it: 3 x tool_args_reformatted, ...``."""
    total = int(summary.get("rollouts") or 0)
    text = f"{summary.get('append_only', 0)}/{total} rollouts append-only"
    broken = int(summary.get("broken") or 0)
    if broken:
        causes = summary.get("causes") or {}
        text += f"; {broken} break it: " + ", ".join(
            f"{n} \N{MULTIPLICATION SIGN} {c}" for c, n in causes.items()
        )
    text += f"; token ids: {summary.get('token_ids_rows', 0)}/{total} rows"
    reason = missing_token_ids_reason(summary)
    if reason is not None:
        text += f" ({reason})"
    if summary.get("length_truncated_rows"):
        text += f"; {summary['length_truncated_rows']} rows hit the length limit"
    return text


__all__ = [
    "TrainingSafetyTotals",
    "describe_training_safety",
    "missing_token_ids_reason",
    "summarize_training_safety",
    "verdict_cause",
]
