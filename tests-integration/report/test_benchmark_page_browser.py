"""A local benchmark run's ``leaderboard.html`` in real headless Chromium (Debian's
``chromium``), opened from ``file://`` with every other request aborted; the screenshot goes to
``build/test-artifacts/report/`` (or ``$OSMOSIS_TEST_ARTIFACTS``). Runs in ``nox -s e2e``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, sync_playwright

from osmosis_ai.eval import BenchmarkRun, TaskOutcome, build_leaderboard
from osmosis_ai.eval._impl.benchmark import BenchmarkTask
from osmosis_ai.eval._impl.report.benchmark_page import render_leaderboard_page

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
ARTIFACTS = Path(
    os.environ.get("OSMOSIS_TEST_ARTIFACTS")
    or Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "report"
)
TASKS = ["bench/t1-alpha", "bench/t2-bravo", "bench/t3-charlie"]


def _page_file(tmp_path: Path) -> Path:
    outcomes = {
        "strong (gpt-5.2)": [TaskOutcome(t, 4, 4) for t in TASKS],
        "steady (qwen3-8b)": [TaskOutcome(TASKS[0], 4, 4), TaskOutcome(TASKS[1], 4, 3),
                              TaskOutcome(TASKS[2], 4, 3)],
        "weak (mock)": [TaskOutcome(TASKS[0], 4, 0), TaskOutcome(TASKS[1], 4, 1, errors=1),
                        TaskOutcome(TASKS[2], 4, 0)],
    }  # fmt: skip
    extra = {a: {"model": a.split("(")[1].rstrip(")"), "rollout": "answer"} for a in outcomes}
    run = BenchmarkRun(
        name="words", benchmark="words", run_dir=tmp_path,
        tasks=[BenchmarkTask(t, f"/tasks/{t}", "") for t in TASKS], attempts_per_task=4,
        leaderboard=build_leaderboard(outcomes, extra),
    )  # fmt: skip
    path = tmp_path / "leaderboard.html"
    path.write_text(render_leaderboard_page(run.as_dict()), encoding="utf-8")
    return path


@pytest.fixture
def page() -> Iterator[Page]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run installs it)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    blocked: list[str] = []
    errors: list[str] = []

    def route(r: Route) -> None:
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        context = browser.new_context(viewport={"width": 1300, "height": 700})
        context.route("**/*", route)
        opened = context.new_page()
        opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        opened.on("pageerror", lambda exc: errors.append(str(exc)))
        yield opened
        browser.close()
    assert errors == []
    assert blocked == []  # the page never tries the network


def test_leaderboard_page_shows_ranks_intervals_and_ties(page: Page, tmp_path: Path) -> None:
    page.goto(_page_file(tmp_path).resolve().as_uri())
    rows = page.locator("#leaderboard tbody tr")
    assert rows.count() == 3
    first = rows.nth(0).locator("td").all_inner_texts()
    # 12/12 vs 10/12: the Wilson intervals overlap, so both are #1 and marked tied
    assert first[:3] == ["#1*", "strong (gpt-5.2)", "100.0%"]
    assert rows.nth(1).locator("td").all_inner_texts()[:3] == ["#1*", "steady (qwen3-8b)", "83.3%"]
    assert rows.nth(2).locator("td").all_inner_texts()[:3] == ["#3", "weak (mock)", "8.3%"]
    assert page.locator("#leaderboard svg.ci").count() == 3
    box = page.locator("#leaderboard svg.ci").first.bounding_box()
    assert box is not None
    assert box["width"] > 100  # the interval bar is drawn, not collapsed
    assert page.get_by_text("tied for first").is_visible()
    assert "1 / 4 (1 error)" in page.locator("#per-task").inner_text()
    page.screenshot(path=str(ARTIFACTS / "benchmark-leaderboard.png"), full_page=True)
