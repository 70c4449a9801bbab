"""The report in real headless Chromium (Debian's ``chromium``), opened from ``file://`` with
every non-file request aborted. Run by ``nox -s report``; screenshots go to
``build/test-artifacts/report/`` (or ``$OSMOSIS_TEST_ARTIFACTS``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from contract_support import CRASH_ROW, TOOL_ERROR_ROW, ContractRun
from playwright.sync_api import Browser, Page, Route, sync_playwright
from report_support import (
    FLIPPED_ROWS,
    GRADER_FAILURE_ROW,
    EvalRuns,
    SafetyRun,
    _workspace,
    run_against_a_dead_endpoint,
)

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
ARTIFACTS = Path(
    os.environ.get("OSMOSIS_TEST_ARTIFACTS")
    or Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "report"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run installs it)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


class Opened:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        self.blocked: list[str] = []

    def open(self, report: Path) -> Page:
        self.page.goto(report.resolve().as_uri())
        self.page.wait_for_selector("body[data-ready='1']", timeout=15_000)
        return self.page

    def shot(self, name: str, *, full_page: bool = False) -> None:
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


@pytest.fixture
def tab(browser: Browser) -> Iterator[Opened]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    opened = Opened(context.new_page())

    def route(r: Route) -> None:
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            opened.blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    opened.page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    opened.page.on("pageerror", lambda exc: opened.errors.append(str(exc)))
    yield opened
    context.close()
    assert opened.errors == []
    assert opened.blocked == []  # the page never tried the network


def _report(runs: EvalRuns, run: str, *extra: str) -> Path:
    target = runs.workspace / "reports" / f"{run}{'-vs' if extra else ''}.html"
    result = runs.cli.run(
        "--json", "eval", "report", run, "-o", str(target), *extra, cwd=runs.workspace
    )
    assert result.code == 0, result.stderr
    return target


def _rows_shown(page: Page) -> list[str]:
    return page.eval_on_selector_all("#row-table tbody tr", "rows => rows.map(r => r.dataset.row)")


def test_headline_numbers_match_metrics_json(eval_runs: EvalRuns, tab: Opened) -> None:
    page = tab.open(_report(eval_runs, "wrong"))
    summary = json.loads((eval_runs.run_dir("wrong") / "metrics.json").read_text())["summary"]
    assert int(page.get_attribute("#row-count", "data-value") or -1) == summary["total_samples"]
    shown_mean = float(page.get_attribute("#mean-reward", "data-value") or "nan")
    assert shown_mean == pytest.approx(summary["reward_stats"]["mean"])
    assert page.inner_text("#mean-reward") == f"{summary['reward_stats']['mean']:.4f}"
    assert len(_rows_shown(page)) == summary["total_samples"]
    # The Strands template sends every turn back byte for byte (osmosis-strands keeps the raw
    # tool arguments): the training-safety panel says all rows are append-only.
    safety = summary["training_safety"]
    assert safety["append_only"] == safety["rollouts"] == summary["total_samples"]
    assert page.get_attribute("#safety-append-only", "data-value") == str(safety["append_only"])
    assert page.locator("#safety-causes").count() == 0
    tab.shot("report-overview", full_page=True)


def test_filter_to_failures_shows_exactly_the_failed_rows(eval_runs: EvalRuns, tab: Opened) -> None:
    page = tab.open(_report(eval_runs, "wrong"))
    index = [json.loads(line) for line in (eval_runs.run_dir("wrong") / "index.jsonl").open()]
    failed = sorted(f"{r['row_index']}.{r['run_index']}" for r in index if r["status"] == "failed")
    assert failed == [f"{GRADER_FAILURE_ROW}.0"]
    page.select_option("#f-status", "failed")
    assert sorted(_rows_shown(page)) == failed
    page.select_option("#f-status", "fail")  # graded below the threshold: the wrong answers
    assert sorted(_rows_shown(page)) == [f"{r}.0" for r in FLIPPED_ROWS]
    page.locator("#rows").scroll_into_view_if_needed()
    tab.shot("report-filtered")


def test_search_reaches_tool_call_arguments(eval_runs: EvalRuns, tab: Opened) -> None:
    page = tab.open(_report(eval_runs, "wrong"))
    page.fill("#f-search", '"a": 11')  # only in row 9's tool call, not in its prompt
    page.wait_for_function("document.querySelector('#shown').dataset.count === '1'")
    assert _rows_shown(page) == ["9.0"]


def test_row_drill_down_shows_transcript_tool_call_and_traceback(
    eval_runs: EvalRuns, tab: Opened
) -> None:
    page = tab.open(_report(eval_runs, "wrong"))
    page.click(f"#row-table tbody tr[data-row='{GRADER_FAILURE_ROW}.0']")
    page.wait_for_selector("#detail .transcript .msg")
    roles = page.eval_on_selector_all("#detail .msg", "ms => ms.map(m => m.className)")
    assert roles == ["msg system", "msg user", "msg assistant", "msg tool", "msg assistant"]
    assert page.inner_text("#detail .tool-call").startswith('→ multiply({"a": 1, "b": -1})')
    traceback = page.inner_text("#detail .traceback pre")
    assert 'grader.py", line 34, in grade' in traceback
    assert traceback.rstrip().endswith("KeyError: 'contnet'")
    assert len(page.query_selector_all("#detail table.calls tr")) == 1 + 2  # header + 2 calls
    tab.shot("report-row-detail")


def test_compare_view_lists_exactly_the_flipped_rows(eval_runs: EvalRuns, tab: Opened) -> None:
    page = tab.open(_report(eval_runs, "right", "--compare", "wrong"))
    flipped = page.eval_on_selector_all(
        "#pair-table tbody tr", "rows => rows.map(r => r.dataset.pair)"
    )
    assert sorted(flipped) == [f"{r}.0" for r in FLIPPED_ROWS]
    changes = page.eval_on_selector_all(
        "#pair-table tbody .pill", "ps => ps.map(p => p.textContent)"
    )
    assert set(changes) == {"improved"}
    assert "4 improved (fail → pass)" in page.inner_text("#compare-summary")
    page.click("#pair-table tbody tr[data-pair='2.0']")
    page.wait_for_selector("#detail .side .transcript")
    assert page.locator("#detail .side .transcript").count() == 2  # this run and the baseline
    tab.shot("report-compare", full_page=True)


#: mode -> (call index, message index, field) of the first divergence (safety_rollout.py)
DIVERGENCES = {
    "tool_args_reformatted": (1, 2, "tool_calls[0].function.arguments"),
    "reasoning_dropped": (1, 2, "reasoning_content"),
    "history_edited": (1, 1, "content"),
    "history_truncated": (1, 1, "messages"),
    "system_changed": (1, 0, "content"),
}


def test_a_run_stopped_before_dispatch_says_why(
    eval_runs: EvalRuns, tab: Opened, tmp_path: Path
) -> None:
    workspace = _workspace(eval_runs.cli, tmp_path)
    stopped, base_url = run_against_a_dead_endpoint(eval_runs.cli, workspace, "dead")
    assert stopped.code == 1
    report = workspace / "dead.html"
    made = eval_runs.cli.run("--json", "eval", "report", "dead", "-o", str(report), cwd=workspace)
    assert made.code == 0, made.stderr
    page = tab.open(report)
    cells = dict(
        page.eval_on_selector_all(
            "#provenance tr", "rs => rs.map(r => [r.cells[0].textContent, r.cells[1].textContent])"
        )
    )
    assert cells["status"] == "partial (10 pending)"
    assert cells["stopped early"].startswith(f"the model endpoint {base_url} could not be reached")
    tab.shot("report-stopped-early")


def test_training_safety_panel_counts_match_metrics_json(
    safety_run: SafetyRun, tab: Opened
) -> None:
    report = safety_run.workspace / "safety.html"
    result = safety_run.cli.run(
        "--json", "eval", "report", "safety", "-o", str(report), cwd=safety_run.workspace
    )
    assert result.code == 0, result.stderr
    page = tab.open(report)
    summary = json.loads((safety_run.run_dir / "metrics.json").read_text())["summary"]
    safety = summary["training_safety"]
    assert (safety["rollouts"], safety["append_only"]) == (7, 2)  # safe, subagents
    assert safety["causes"] == dict.fromkeys(DIVERGENCES, 1)
    assert page.get_attribute("#safety-append-only", "data-value") == "2"
    assert page.inner_text("#safety-append-only") == "2/7"
    assert page.get_attribute("#safety-token-ids", "data-value") == "7"  # --token-ids
    assert "fp_osmosis_scripted" in page.inner_text("#provenance")  # fingerprints seen
    assert page.get_attribute("#safety-truncated", "data-value") == "0"
    shown = page.eval_on_selector_all(
        "#safety-causes tr[data-cause]",
        "rs => rs.map(r => [r.dataset.cause, Number(r.cells[0].textContent)])",
    )
    assert dict(shown) == safety["causes"]
    page.locator("#safety").scroll_into_view_if_needed()
    tab.shot("report-training-safety")

    # "show rows" filters the table to that cause's rows.
    page.click("#safety-causes tr[data-cause='history_truncated'] button:text('show rows')")
    row = safety_run.modes.index("history_truncated")
    assert _rows_shown(page) == [f"{row}.0"]
    page.select_option("#f-safety", "ok")
    ok_rows = [f"{safety_run.modes.index(m)}.0" for m in ("safe", "subagents")]
    assert sorted(_rows_shown(page)) == ok_rows


def test_row_detail_shows_the_first_divergence(safety_run: SafetyRun, tab: Opened) -> None:
    report = safety_run.workspace / "safety-rows.html"
    result = safety_run.cli.run(
        "--json", "eval", "report", "safety", "-o", str(report), cwd=safety_run.workspace
    )
    assert result.code == 0, result.stderr
    page = tab.open(report)
    index = {
        r["row_index"]: r["training_safety"]
        for r in map(json.loads, (safety_run.run_dir / "index.jsonl").open())
    }
    for row, mode in enumerate(safety_run.modes):
        page.click(f"#row-table tbody tr[data-row='{row}.0']")
        detail = page.locator("#detail .row-safety")
        detail.wait_for()
        text = detail.inner_text()
        if mode == "tool_args_reformatted":
            tab.shot("report-row-divergence")
        page.keyboard.press("Escape")  # close the panel: it covers the table
        if mode not in DIVERGENCES:
            assert detail.get_attribute("data-cause") == "ok", text
            assert "append-only" in text
            continue
        call, message, field = DIVERGENCES[mode]
        divergence = index[row]["divergence"]
        assert detail.get_attribute("data-cause") == mode == divergence["cause"]
        assert f"call index {call} (policy call {call + 1} below)" in text
        assert f"message index {message} · field {field}" in text
        excerpts = detail.locator("pre").all_inner_texts()  # expected, then actual
        assert excerpts == [divergence["expected"], divergence["actual"]]
        if mode == "reasoning_dropped":
            assert divergence["expected"] == "I will use the tool."


def test_grader_metrics_cost_label_and_explanation_are_shown(
    contract: ContractRun, tab: Opened
) -> None:
    """The contract run (a grader with two metrics and an explanation, priced calls, a crashed
    row): results come first, each metric has a card, cost and label are beside the answer."""
    run_dir = contract.run.run_dir
    target = run_dir.parent / "contract-report.html"
    made = contract.cli.run(
        "--json", "eval", "report", str(run_dir), "-o", str(target), cwd=contract.workspace
    )
    assert made.code == 0, made.stderr
    page = tab.open(target)
    order = page.eval_on_selector_all("main > section", "ss => ss.map(s => s.id)")
    assert order.index("metrics") < order.index("provenance")  # results above the fold
    metrics = page.eval_on_selector_all(
        ".grader-metric", "cs => cs.map(c => [c.dataset.metric, c.textContent])"
    )
    assert sorted(metrics) == [["exact", "1.000"], ["used_tool", "1.000"]]
    assert page.inner_text("#run-cost").startswith("$")
    heads = page.eval_on_selector_all("#row-table thead th", "hs => hs.map(h => h.textContent)")
    assert heads.index("cost") < heads.index("label") < heads.index("answer")
    tab.shot("report-grader-metrics")
    page.click("#row-table tbody tr[data-row='0.0']")
    page.wait_for_selector("#detail .explanation")
    assert page.inner_text("#detail .explanation").startswith("expected 6")
    tab.shot("report-explanation")
    page.click("#detail .close")
    page.click(f"#row-table tbody tr[data-row='{CRASH_ROW}.0']")
    page.wait_for_selector("#detail .transcript .msg")  # the crashed row's partial transcript
    assert "failed phase" in page.inner_text("#detail table.kv")
    assert "workflow" in page.inner_text("#detail table.kv")
    tab.shot("report-crashed-row")
    page.click("#detail .close")
    assert page.inner_text("#tool-error-rows") == "2"
    page.select_option("#f-tools", "1")
    assert sorted(_rows_shown(page)) == [f"{TOOL_ERROR_ROW}.0", f"{TOOL_ERROR_ROW}.1"]
    assert page.locator("#row-table td.tool-error").count() == 2
    page.click(f"#row-table tbody tr[data-row='{TOOL_ERROR_ROW}.0']")
    page.wait_for_selector("#detail ul.tool-errors")
    assert page.inner_text("#detail ul.tool-errors") == "multiply: ValueError: multiply is flaky"
    tab.shot("report-tool-errors")
    page.click("#detail .close")
    # reward-hacking tripwires (docs/tripwires.md): the card and the ⚑ cells match metrics.json
    flagged = contract.run.metrics["tripwires"]["rows"]
    assert page.locator("#tripwire-rows").count() == (1 if flagged else 0)
    if flagged:
        assert page.inner_text("#tripwire-rows") == str(flagged)
    page.select_option("#f-tools", "")
    flagged_rows = [r for r in contract.run.rows if r.tripwires]
    shown = page.locator("#row-table td.tripwire").count()
    assert shown == min(len(flagged_rows), len(_rows_shown(page)))


def test_the_index_of_every_run_filters_links_and_gives_the_compare_command(
    eval_runs: EvalRuns, tab: Opened
) -> None:
    made = eval_runs.cli.run("--json", "eval", "report", "--all", cwd=eval_runs.workspace)
    assert made.code == 0, made.stderr
    index = Path(made.json()["resource"]["path"])
    assert index == eval_runs.runs / "index.html"
    page = tab.open(index)
    names = page.eval_on_selector_all("#run-index tbody tr", "rs => rs.map(r => r.dataset.run)")
    assert set(names) >= {"wrong", "right"}
    href = page.get_attribute("#run-index tr[data-run='wrong'] a", "href")
    assert href == "wrong/report.html"
    assert (eval_runs.runs / "wrong" / "report.html").is_file()
    page.fill("#run-filter", "wrong")
    visible = page.eval_on_selector_all(
        "#run-index tbody tr:not([hidden])", "rs => rs.map(r => r.dataset.run)"
    )
    assert visible == ["wrong"]
    page.fill("#run-filter", "")
    page.check("#run-index tr[data-run='wrong'] input")
    page.check("#run-index tr[data-run='right'] input")
    assert page.inner_text("#compare-command") == (
        "osmosis eval report right --compare wrong -o right-vs-wrong.html"
    )
    tab.shot("report-index")


def test_keyboard_walks_the_rows_and_compare_has_baseline_cards_and_deep_links(
    eval_runs: EvalRuns, tab: Opened
) -> None:
    target = _report(eval_runs, "right", "--compare", "wrong")
    page = tab.open(target)
    summary = json.loads((eval_runs.run_dir("wrong") / "metrics.json").read_text())["summary"]
    baseline_mean = float(page.get_attribute("#baseline-mean", "data-value") or "nan")
    assert baseline_mean == pytest.approx(summary["reward_stats"]["mean"])
    page.click("#row-table tbody tr[data-row='3.0']")
    page.wait_for_selector("#detail .transcript .msg")
    page.keyboard.press("j")
    page.wait_for_function(
        "document.querySelector('#detail h3').textContent === 'row 4 · sample 0'"
    )
    page.keyboard.press("k")
    page.keyboard.press("k")
    page.wait_for_function(
        "document.querySelector('#detail h3').textContent === 'row 2 · sample 0'"
    )
    page.keyboard.press("Escape")
    page.click("#pair-table tbody tr[data-pair='2.0']")
    page.wait_for_selector("#detail .side .transcript")
    assert page.evaluate("location.hash") == "#pair=2.0"
    deep = tab.page.context.new_page()
    deep.goto(target.resolve().as_uri() + "#pair=4.0")
    deep.wait_for_selector("body[data-ready='1']", timeout=15_000)
    assert deep.locator("#detail .side .transcript").count() == 2
    assert "row 4 · sample 0" in deep.inner_text("#detail h3")
    tab.shot("report-compare-baseline", full_page=True)
