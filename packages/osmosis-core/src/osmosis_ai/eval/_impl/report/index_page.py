"""``osmosis eval report --all``: one offline page over every local run.

A table of the runs (name, status, stop code, start, model, rollout, rows, mean reward, pass
rate, cost), a filter box, a link to each run's ``report.html``, and "compare": tick two runs
and the page gives the ``osmosis eval report`` command that writes their comparison (the page
is a file, it cannot run it). Like the run report it is one self-contained file that never
touches the network.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from osmosis_ai.atomic_file import write_atomic
from osmosis_ai.eval._impl.report.html import _asset, _script_json
from osmosis_ai.eval._impl.report.run_data import RunHeader

INDEX_FILE = "index.html"


def _entry(header: RunHeader, root: Path) -> dict[str, Any]:
    figures = header.figures
    try:
        report = (header.path / "report.html").relative_to(root).as_posix()
    except ValueError:
        report = (header.path / "report.html").resolve().as_uri()
    return {
        "name": header.name,
        "status": header.status,
        "stop_code": header.stop_code,
        "started_at": header.started_at or header.created_at,
        "model": header.model,
        "rollout": header.rollout,
        "rows": figures.total_samples,
        "mean_reward": figures.mean_reward,
        "pass_rate": figures.pass_rate,
        "cost_usd": figures.cost_usd,
        "report": report,
    }


def render_runs_index(headers: list[RunHeader], root: Path) -> str:
    """The index page of ``headers`` (links relative to ``root``, where the page is written)."""
    runs = [_entry(h, root) for h in headers]
    heads = "".join(
        f"<th>{html.escape(h)}</th>"
        for h in (
            "compare", "run", "status", "started", "model", "rollout", "rows", "mean reward",
            "pass rate", "cost",
        )
    )  # fmt: skip
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>osmosis eval runs</title>\n<style>\n{_asset('report.css')}</style>\n</head>\n"
        '<body>\n<header><h1 id="title">osmosis eval · local runs</h1></header>\n<main>\n'
        f'<p class="muted">{len(runs)} runs in {html.escape(str(root))}. Click a run to open '
        "its report.</p>\n"
        '<div class="filters"><input id="run-filter" type="search" '
        'placeholder="filter by name, status, model, rollout…"></div>\n'
        '<p><code id="compare-command">tick two runs (the baseline first) to get the command '
        "that compares them</code></p>\n"
        f'<table class="grid rows" id="run-index"><thead><tr>{heads}</tr></thead>'
        "<tbody></tbody></table>\n</main>\n"
        f'<script type="application/json" id="runs">{_script_json(runs)}</script>\n'
        f"<script>{_asset('index.js')}</script>\n</body>\n</html>\n"
    )


def write_runs_index(headers: list[RunHeader], root: Path) -> Path:
    """Write the index page to ``root/index.html`` atomically; returns its path."""
    path = root / INDEX_FILE
    write_atomic(path, render_runs_index(headers, root))
    return path
