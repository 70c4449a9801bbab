from __future__ import annotations

from pathlib import Path

from osmosis_ai.eval.report import compare_runs, group_failures, innermost_frame, load_run

from .run_builder import Row, write_run

TB = (
    "Traceback (most recent call last):\n"
    '  File "/sdk/engine.py", line 90, in run\n'
    "    await grade()\n"
    '  File "/ws/grader.py", line {line}, in grade\n'
    "    x = d['contnet']\n"
    "KeyError: 'contnet'\n"
)


def test_rows_pair_by_source_row_and_sample(tmp_path: Path) -> None:
    a = load_run(
        write_run(
            tmp_path,
            "a",
            [
                Row(0, reward=1.0),
                Row(1, reward=0.0),
                Row(2, reward=1.0),
                Row(3, status="failed", reward=None, error_type="timeout"),
                Row(4, reward=1.0),
            ],
        )
    )
    b = load_run(
        write_run(
            tmp_path,
            "b",
            [
                Row(0, reward=0.0),  # regressed
                Row(1, reward=1.0),  # improved
                Row(2, status="failed", reward=None, error_type="timeout"),  # status changed
                Row(3, reward=1.0),  # status changed
                Row(5, reward=1.0),  # only in b
            ],
        )
    )
    comparison = compare_runs(a, b)
    changes = {p.key[0]: p.change for p in comparison.pairs}
    assert changes == {
        0: "regressed",
        1: "improved",
        2: "status_changed",
        3: "status_changed",
        4: "only_a",
        5: "only_b",
    }
    assert [p.key[0] for p in comparison.flipped] == [0, 1]  # flips come first
    assert comparison.mean_difference is not None
    assert comparison.mean_difference.n == 2  # rows 0 and 1 are graded in both
    assert comparison.mean_difference.estimate == 0.0
    summary = comparison.summary()
    assert (summary["regressed"], summary["improved"], summary["only_a"]) == (1, 1, 1)


def test_a_source_row_selected_at_another_position_still_pairs(tmp_path: Path) -> None:
    a = load_run(write_run(tmp_path, "a", [Row(0, source=7, reward=0.0)]))
    b = load_run(write_run(tmp_path, "b", [Row(0, source=3), Row(1, source=7)]))
    pairs = {p.key: p.change for p in compare_runs(a, b).pairs}
    assert pairs == {(7, 0): "improved", (3, 0): "only_b"}


def test_failures_group_by_type_message_and_code_location(tmp_path: Path) -> None:
    failed = {"status": "failed", "reward": None, "error_type": "agent_error"}
    run = load_run(
        write_run(
            tmp_path,
            "a",
            [
                Row(0, **failed, traceback=TB.format(line=12)),
                Row(1, **failed, traceback=TB.format(line=12)),
                Row(2, **failed, traceback=TB.format(line=40)),
                Row(3, status="failed", reward=None, error_type="timeout", error_message="late"),
                Row(4),
            ],
        )
    )
    groups = group_failures(run.rows)
    assert [g.describe() for g in groups] == [
        "2 \N{MULTIPLICATION SIGN} KeyError: 'contnet' in grader.py:12 (agent_error)",
        "1 \N{MULTIPLICATION SIGN} KeyError: 'contnet' in grader.py:40 (agent_error)",
        "1 \N{MULTIPLICATION SIGN} late (timeout)",
    ]
    assert groups[0].as_dict()["rows"] == [[0, 0], [1, 0]]
    location = innermost_frame(TB.format(line=12))
    assert location is not None
    assert (location.file, location.line) == ("/ws/grader.py", 12)
    assert innermost_frame("no traceback here") is None


def test_failures_that_differ_only_by_url_id_or_number_are_one_group() -> None:
    """Eight identical HTTP errors, each naming its own rollout's proxy URL, are one group of 8
    (with the first message kept as the example), not eight groups of one."""
    from osmosis_ai.eval import RowRecord

    def failed(i: int, message: str, error_type: str = "http_error") -> RowRecord:
        return RowRecord(
            row_index=i,
            run_index=0,
            source_row_index=i,
            status="failed",
            error_type=error_type,
            error_message=message,
        )

    rows = [
        failed(
            i,
            f"HTTP 500 from http://127.0.0.1:{40000 + i}/r/{i:04d}ab12cd34ef56/v1/chat/completions:"
            f" rollout 3f2b9c1e-1111-2222-3333-44445555{i:04d} after {i}.5s",
        )
        for i in range(8)
    ]
    rows.append(failed(8, "HTTP 404 from http://127.0.0.1:40008/r/x/v1/chat/completions: gone"))
    rows.append(failed(9, "late", error_type="timeout"))
    groups = group_failures(rows)
    assert [(g.count, g.error_type) for g in groups] == [
        (8, "http_error"),
        (1, "http_error"),
        (1, "timeout"),
    ]
    assert groups[0].message == rows[0].error_message  # one real example, not the pattern
    assert groups[1].message.startswith("HTTP 404")  # a different status is another failure
