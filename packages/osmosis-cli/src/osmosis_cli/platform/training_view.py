"""``osmosis train info NAME``: the run, its progress, metric trends and checkpoints.

The platform serves a training run's metric history (``GET .../metrics``: per metric a title
and ``(step, value)`` points, plus summaries) and its checkpoints (``GET .../checkpoints``).
A terminal gets one row per metric with a sparkline of the trend; ``--json`` the series
themselves; ``--html PATH`` a standalone page with one chart per metric and the checkpoint table
(no script, no network: it opens from disk and prints).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Output
from osmosis_cli.platform.client import PlatformClient
from osmosis_cli.platform.run_ops import fetch_run, run_path, write_output_file

BLOCKS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 24


def sparkline(values: Sequence[float], width: int = SPARK_WIDTH) -> str:
    """``values`` as block characters, evenly resampled to at most ``width`` (finite only)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return ""
    if len(finite) > width:
        step = (len(finite) - 1) / (width - 1)
        finite = [finite[round(i * step)] for i in range(width)]
    low, high = min(finite), max(finite)
    span = high - low
    if span == 0:
        return BLOCKS[len(BLOCKS) // 2] * len(finite)
    return "".join(
        BLOCKS[min(len(BLOCKS) - 1, int((v - low) / span * len(BLOCKS)))] for v in finite
    )


def _series(metrics: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for metric in (metrics or {}).get("metrics") or []:
        if not isinstance(metric, dict):
            continue
        points = [
            (int(p["step"]), float(p["value"]))
            for p in metric.get("data_points") or []
            if isinstance(p, dict)
            and isinstance(p.get("step"), int)
            and isinstance(p.get("value"), int | float)
        ]
        points.sort()
        found.append(
            {
                "key": metric.get("metric_key"),
                "title": metric.get("title") or metric.get("metric_key"),
                "points": points,
            }
        )
    return found


def _fetch_optional(client: PlatformClient, path: str) -> Any:
    """A section the platform may not have for this run (``404``: none yet)."""
    try:
        return client.request("GET", path)
    except CLIError as error:
        if error.code is CLIErrorCode.NOT_FOUND:
            return None
        raise


def training_view(run: str, client: PlatformClient) -> dict[str, Any]:
    data = fetch_run("training", run, client)
    key = str(data.get("id") or run)
    metrics = _fetch_optional(client, run_path("training", key, "metrics"))
    checkpoints = _fetch_optional(client, run_path("training", key, "checkpoints"))
    overview = (metrics or {}).get("overview") or {}
    latest, total = overview.get("latest_step"), overview.get("total_steps")
    progress = None
    if isinstance(latest, int) and isinstance(total, int) and total > 0:
        progress = {
            "latest_step": latest,
            "total_steps": total,
            "percent": round(100 * latest / total, 1),
        }
    return {
        "run": data,
        "progress": progress,
        "summaries": overview.get("metric_summaries") or [],
        "trends": _series(metrics),
        "checkpoints": [
            c for c in (checkpoints or {}).get("checkpoints") or [] if isinstance(c, dict)
        ],
    }


def show_training_run(run: str, output: Output, *, html_out: Path | None, overwrite: bool) -> None:
    view = training_view(run, PlatformClient.from_login())
    name = view["run"].get("name") or run
    if html_out is not None:
        write_output_file(html_out, render_html(view), overwrite)
        output.emit_operation(
            "train.info",
            message=f"Wrote training run {name}'s trends and checkpoints to {html_out}.",
            resource={"id": view["run"].get("id"), "name": name, "path": str(html_out)},
        )
        return
    if output.is_json:  # the run's own fields first, as `train info --json` always gave them
        output.emit_detail(
            {
                **view["run"],
                "progress": view["progress"],
                "metric_summaries": view["summaries"],
                "trends": [{**t, "points": [list(p) for p in t["points"]]} for t in view["trends"]],
                "checkpoints": view["checkpoints"],
            }
        )
        return
    output.emit_detail(_run_rows(view), title=f"Training run {name}")
    rows = [
        {
            "metric": t["title"],
            "first": _num(t["points"][0][1]) if t["points"] else "-",
            "latest": _num(t["points"][-1][1]) if t["points"] else "-",
            "steps": len(t["points"]),
            "trend": sparkline([v for _, v in t["points"]]),
        }
        for t in view["trends"]
    ]
    output.emit_list(
        rows,
        columns=[
            Column("metric", "Metric"),
            Column("first", "First"),
            Column("latest", "Latest"),
            Column("steps", "Points"),
            Column("trend", "Trend"),
        ],
        plain=lambda r: f"{r['metric']}\t{r['first']}\t{r['latest']}\t{r['trend']}",
        title="Metrics",
        empty="No metrics yet.",
    )
    output.emit_list(
        view["checkpoints"],
        columns=[
            Column("checkpoint_step", "Step"),
            Column("checkpoint_name", "Checkpoint"),
            Column("status", "Status"),
            Column("created_at", "Created"),
        ],
        plain=lambda c: (
            f"{c.get('checkpoint_step')}\t{c.get('checkpoint_name')}\t{c.get('status')}"
        ),
        title="Checkpoints",
        empty="No checkpoints yet.",
    )
    if view["checkpoints"]:
        output.progress("Deploy one for inference: osmosis model deploy <checkpoint name>")


def _run_rows(view: Mapping[str, Any]) -> dict[str, Any]:
    run = view["run"]
    rows = {
        k: run.get(k)
        for k in (
            "id",
            "name",
            "status",
            "model_name",
            "dataset_name",
            "created_at",
            "updated_at",
            "url",
        )
        if run.get(k) is not None
    }
    progress = view.get("progress")
    if progress:
        rows["progress"] = (
            f"step {progress['latest_step']} of {progress['total_steps']} ({progress['percent']}%)"
        )
    return rows


def _num(value: float) -> str:
    return f"{value:.4g}"


# -- the HTML page ----------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1d2433;padding:0 1rem}
h1{font-size:1.4rem;margin:0 0 .3rem}.meta{color:#5b6477;margin-bottom:1.2rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:1rem}
.card{border:1px solid #dde2ea;border-radius:8px;padding:.8rem 1rem;background:#fff}
.card h2{font-size:.95rem;margin:0 0 .4rem}.card .v{color:#5b6477;font-size:.85rem}
svg{width:100%;height:140px}polyline{fill:none;stroke:#2b6cb0;stroke-width:2}
.axis{stroke:#c8ced8;stroke-width:1}text{fill:#5b6477;font-size:10px}
table{border-collapse:collapse;width:100%;margin-top:1rem}th,td{text-align:left;padding:.35rem .6rem;
border-bottom:1px solid #e5e9f0}th{color:#5b6477;font-weight:600}
"""


def _chart(points: Sequence[tuple[int, float]]) -> str:
    finite = [(s, v) for s, v in points if math.isfinite(v)]
    if len(finite) < 2:
        return "<p class='v'>Not enough points for a trend.</p>"
    width, height, pad, left = 320, 130, 24, 46  # `left`: room for the value labels
    steps = [s for s, _ in finite]
    values = [v for _, v in finite]
    s0, s1 = min(steps), max(steps)
    v0, v1 = min(values), max(values)
    vs = (v1 - v0) or 1.0
    ss = (s1 - s0) or 1
    coords = " ".join(
        f"{left + (s - s0) / ss * (width - left - pad):.1f},"
        f"{height - pad - (v - v0) / vs * (height - 2 * pad):.1f}"
        for s, v in finite
    )
    return (
        f"<svg viewBox='0 0 {width} {height}' role='img'>"
        f"<line class='axis' x1='{left}' y1='{height - pad}' x2='{width - pad}' y2='{height - pad}'/>"
        f"<line class='axis' x1='{left}' y1='{pad}' x2='{left}' y2='{height - pad}'/>"
        f"<polyline points='{coords}'/>"
        f"<text x='{left}' y='{height - 6}'>step {s0}</text>"
        f"<text x='{width - pad}' y='{height - 6}' text-anchor='end'>step {s1}</text>"
        f"<text x='{left - 4}' y='{pad + 4}' text-anchor='end'>{html.escape(_num(v1))}</text>"
        f"<text x='{left - 4}' y='{height - pad}' text-anchor='end'>{html.escape(_num(v0))}</text>"
        "</svg>"
    )


def render_html(view: Mapping[str, Any]) -> str:
    run = view["run"]
    name = html.escape(str(run.get("name") or run.get("id")))
    meta = " · ".join(html.escape(f"{k}: {v}") for k, v in _run_rows(view).items() if k != "name")
    cards = (
        "".join(
            f"<div class='card'><h2>{html.escape(str(t['title']))}</h2>"
            f"<div class='v'>{len(t['points'])} points"
            + (f", latest {html.escape(_num(t['points'][-1][1]))}" if t["points"] else "")
            + f"</div>{_chart(t['points'])}</div>"
            for t in view["trends"]
        )
        or "<p>No metrics yet.</p>"
    )
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(c.get(k, '')))}</td>"
            for k in ("checkpoint_step", "checkpoint_name", "status", "created_at")
        )
        + "</tr>"
        for c in view["checkpoints"]
    )
    table = (
        "<table><thead><tr><th>Step</th><th>Checkpoint</th><th>Status</th><th>Created</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
        if rows
        else "<p>No checkpoints yet.</p>"
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Training run {name}</title><style>{_CSS}</style></head><body>"
        f"<h1>Training run {name}</h1><div class='meta'>{meta}</div>"
        f"<div class='grid'>{cards}</div><h2>Checkpoints</h2>{table}</body></html>\n"
    )
