"""Assemble the one-file report: the page template, its CSS and JS, and the embedded data.

Nothing is fetched when the page opens (no CDN, no server, no ``fetch``): it works from
``file://`` with networking off. The same run always gives a byte-identical file.
"""

from __future__ import annotations

import html
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

from osmosis_ai.atomic_file import write_atomic
from osmosis_ai.eval._impl.report.compare import RunComparison, compare_runs
from osmosis_ai.eval._impl.report.payload import Redact, build_payload
from osmosis_ai.eval._impl.report.run_data import RunData

_MARKER = re.compile(r"\{\{(TITLE|CSS|META|DATA|JS)\}\}")
_ASSETS = files("osmosis_ai.eval._impl.report") / "assets"


def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _script_json(value: Any) -> str:
    """JSON safe inside ``<script>``: ``</`` and ``<!--`` cannot end or confuse the element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c")


def render_report(
    run: RunData, *, compare_with: RunData | None = None, redact: Redact | None = None
) -> str:
    """The report of ``run`` (and of ``run`` versus the baseline ``compare_with``) as HTML."""
    comparison: RunComparison | None = None
    if compare_with is not None:
        comparison = compare_runs(compare_with, run)
    meta, blobs = build_payload(run, comparison, redact)
    title = f"osmosis eval · {run.header.name}"
    if compare_with is not None:
        title += f" vs {compare_with.header.name}"
    data = "\n".join(
        f'<script type="application/octet-stream" id="{key}">{value}</script>'
        for key, value in blobs.items()
    )
    values = {
        "TITLE": html.escape(title),
        "CSS": _asset("report.css"),
        "META": _script_json(meta),
        "DATA": data,
        "JS": _asset("report.js"),
    }
    # One pass: inserted text is never scanned for markers again.
    return _MARKER.sub(lambda m: values[m[1]], _asset("report.html"))


def write_report(
    run: RunData,
    path: Path,
    *,
    compare_with: RunData | None = None,
    redact: Redact | None = None,
) -> Path:
    """Write :func:`render_report` to ``path`` atomically; returns ``path``."""
    text = render_report(run, compare_with=compare_with, redact=redact)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)
    return path
