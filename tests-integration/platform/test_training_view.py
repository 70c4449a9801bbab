"""``train info NAME``: progress, metric trends (sparklines, JSON series, an HTML page seen in
real headless Chromium) and the checkpoint table, against the stand-in platform."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]

ARTIFACTS = Path(
    os.environ.get("OSMOSIS_TEST_ARTIFACTS")
    or Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "report"
)
CHROMIUM = Path("/usr/bin/chromium")


def _points(fn, steps: int) -> list[dict]:
    return [{"step": s, "value": fn(s), "timestamp": 1_700_000_000_000 + s} for s in range(steps)]


@pytest.fixture
def trained(cli: Cli, platform: Platform) -> dict:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    run = platform.state.add_run("training", "calc-train", status="running")
    platform.state.training_metrics[run["id"]] = {
        "overview": {"latest_step": 30, "total_steps": 120, "duration_ms": 900_000},
        "metrics": [
            {"metric_key": "reward", "title": "Training reward",
             "data_points": _points(lambda s: 0.2 + 0.02 * s, 31)},
            {"metric_key": "entropy", "title": "Entropy",
             "data_points": _points(lambda s: 1.5 * math.exp(-s / 20), 31)},
            {"metric_key": "truncation", "title": "Truncation ratio", "data_points": []},
        ],
    }  # fmt: skip
    platform.state.checkpoints[run["id"]] = [
        {"id": "ck_1", "checkpoint_step": 10, "checkpoint_name": "calc-step-10",
         "status": "ready", "created_at": "2026-12-01T10:00:00Z"},
        {"id": "ck_2", "checkpoint_step": 20, "checkpoint_name": "calc-step-20",
         "status": "uploading", "created_at": "2026-12-01T11:00:00Z"},
    ]  # fmt: skip
    return run


def test_json_carries_progress_series_and_checkpoints(
    cli: Cli, trained: dict, tmp_path: Path
) -> None:
    data = cli("--json", "train", "info", "calc-train", cwd=tmp_path).envelope()["data"]
    assert (data["id"], data["name"]) == (trained["id"], "calc-train")  # the run's own fields
    assert data["progress"] == {"latest_step": 30, "total_steps": 120, "percent": 25.0}
    reward = next(t for t in data["trends"] if t["key"] == "reward")
    assert reward["points"][0] == [0, 0.2]
    assert reward["points"][-1] == [30, pytest.approx(0.8)]
    assert [c["checkpoint_name"] for c in data["checkpoints"]] == ["calc-step-10", "calc-step-20"]


def test_the_terminal_shows_a_sparkline_per_metric(cli: Cli, trained: dict, tmp_path: Path) -> None:
    plain = cli("--plain", "train", "info", "calc-train", cwd=tmp_path)
    assert plain.code == 0, plain.stderr
    lines = {line.split("\t")[0]: line.split("\t") for line in plain.stdout.splitlines()}
    reward = lines["Training reward"]
    assert reward[-1][0] == "▁"
    assert reward[-1][-1] == "█"
    entropy = lines["Entropy"]
    assert entropy[-1][0] == "█"
    assert entropy[-1][-1] == "▁"
    assert lines["Truncation ratio"][-1] == ""  # no points, no trend
    assert "progress: step 30 of 120 (25.0%)" in plain.stdout
    assert "calc-step-20\tuploading" in plain.stdout


def test_a_run_without_metrics_yet_still_shows(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    platform.state.add_run("training", "fresh", status="queued")
    data = cli("--json", "train", "info", "fresh", cwd=tmp_path).envelope()["data"]
    assert (data["trends"], data["checkpoints"], data["progress"]) == ([], [], None)


def test_the_html_page_in_a_real_browser(cli: Cli, trained: dict, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "calc-train.html"
    written = cli("--json", "train", "info", "calc-train", "--html", str(page_file), cwd=tmp_path)
    assert written.code == 0, written.stderr
    again = cli("--json", "train", "info", "calc-train", "--html", str(page_file), cwd=tmp_path)
    assert again.error()["error"]["code"] == "CONFLICT"
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run installs it)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            blocked: list[str] = []
            context.route(
                "**/*",
                lambda r: (
                    r.continue_()
                    if r.request.url.startswith("file://")
                    else (blocked.append(r.request.url), r.abort())
                ),
            )
            page = context.new_page()
            page.goto(page_file.resolve().as_uri())
            assert page.locator("h1").inner_text() == "Training run calc-train"
            cards = page.locator(".card h2").all_inner_texts()
            assert cards == ["Training reward", "Entropy", "Truncation ratio"]
            assert page.locator("polyline").count() == 2
            box = page.locator("polyline").first.bounding_box()
            assert box is not None
            assert box["width"] > 100
            rows = page.locator("tbody tr").all_inner_texts()
            assert [r.split("\t")[1] for r in rows] == ["calc-step-10", "calc-step-20"]
            page.screenshot(path=str(ARTIFACTS / "train-info.png"), full_page=True)
            assert blocked == []
        finally:
            browser.close()
