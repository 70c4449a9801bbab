"""``osmosis eval run`` through the CLI entry point (in process): envelopes and exit codes.

The command renders :func:`osmosis_ai.eval.run_eval`; the library's behaviour is tested in
osmosis-core's ``tests/eval``, this file tests what the command shows and returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_harness import TINY_ROLLOUT  # pyright: ignore[reportMissingImports]
from cli_harness import load_tiny_rollout as _load_tiny_rollout  # pyright: ignore[reportMissingImports]

from osmosis_ai.testing import ErrorReply, ScriptedPolicyServer
from osmosis_ai.testing.replies import Reply
from osmosis_cli.main import run

MakeWorkspace = Callable[..., Path]


@pytest.fixture
def workspace(tmp_path: Path) -> MakeWorkspace:
    """``workspace(**kw)`` writes a tiny rollout workspace and returns its eval config path."""

    def make(**kwargs: Any) -> Path:
        return _load_tiny_rollout().write_workspace(tmp_path / "ws", **kwargs)

    return make


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _error(err: str) -> dict[str, Any]:
    return json.loads([line for line in err.splitlines() if '"error"' in line][-1])["error"]


def test_json_envelope_of_a_successful_run(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=2, mode="noop")
    code, out, err = _cli(capsys, "eval", "run", str(config), "--name", "ok", "--n", "2", "--json")
    assert code == 0, err
    envelope = json.loads(out)
    assert envelope["schema_version"] == 1
    assert envelope["operation"] == "eval.run"
    assert envelope["status"] == "success"
    resource = envelope["resource"]
    for key in ("run_name", "output_path", "total_work_items", "succeeded", "failed", "skipped"):
        assert key in resource
    assert resource["run_name"] == "ok"
    assert resource["total_work_items"] == 4
    assert resource["metrics"]["reward_stats"]["mean"] == 1.0
    assert resource["metrics"]["pass_rate"] == 1.0
    assert '"MOCK_MODEL"' in err  # --model mock is flagged as a plumbing check


def test_failures_make_the_run_partial_and_exit_1(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=1)
    with ScriptedPolicyServer(lambda body: ErrorReply(400, "no")) as policy:
        code, out, _ = _cli(
            capsys, "eval", "run", str(config), "--base-url", policy.url, "--model", "m", "--json"
        )
    assert code == 1
    envelope = json.loads(out)
    assert envelope["status"] == "partial"
    assert envelope["resource"]["failed"] == 1
    assert envelope["resource"]["failed_rows"][0]["error_type"] == "http_error"


def test_plain_summary_lists_the_metrics(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=2, mode="noop")
    code, out, _ = _cli(capsys, "eval", "run", str(config), "--n", "2", "--plain")
    assert code == 0
    assert "mean reward: 1.0000" in out
    assert "pass@2: 1.0000" in out


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--rows", "0", "--limit", "1"), "VALIDATION", "either --rows or --limit"),
        (("--rows", "9"), "VALIDATION", "out of range"),
        (("--model", "nowhere"), "VALIDATION", "cannot tell where to send"),
        (("--name", "a/b"), "VALIDATION", "invalid run name"),
    ],
)
def test_bad_flags_are_explained(
    workspace: MakeWorkspace,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    code: str,
    message: str,
) -> None:
    config = workspace(n_rows=2, mode="noop")
    exit_code, _, err = _cli(capsys, "eval", "run", str(config), *args, "--json")
    assert exit_code == 1
    error = _error(err)
    assert error["code"] == code
    assert message in error["message"]


def test_invalid_config_lists_every_issue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "configs" / "eval" / "x.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[experiment]\nrollout = "r"\n[bogus]\n')
    code, _, err = _cli(capsys, "eval", "run", str(config), "--json")
    assert code == 1
    error = _error(err)
    assert error["code"] == "VALIDATION"
    assert len(error["details"]["issues"]) >= 2


def test_changed_input_is_a_conflict(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=2, mode="noop")
    assert _cli(capsys, "eval", "run", str(config), "--name", "c", "--json")[0] == 0
    code, _, err = _cli(capsys, "eval", "run", str(config), "--name", "c", "--limit", "1", "--json")
    assert code == 1
    error = _error(err)
    assert error["code"] == "CONFLICT"
    assert error["details"]["changed"] == ["dataset"]


def test_missing_server_extra_names_the_install_command(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def without_uvicorn(name: str, *args: Any) -> Any:
        return None if name == "uvicorn" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_uvicorn)
    config = workspace(n_rows=1, mode="noop")
    code, _, err = _cli(capsys, "eval", "run", str(config), "--json")
    assert code == 1
    error = _error(err)
    assert error["code"] == "VALIDATION"
    assert "pip install 'osmosis-cli[eval]'" in error["message"]


def test_rejected_api_key_fails_fast_with_a_hint(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINY_KEY", "wrong-key-1234")
    config = workspace(n_rows=3)
    with ScriptedPolicyServer(lambda body: ErrorReply(401, "invalid api key")) as policy:
        code, _, err = _cli(
            capsys, "eval", "run", str(config), "--base-url", policy.url, "--model", "m",
            "--api-key-env", "TINY_KEY", "--json",
        )  # fmt: skip
    assert code == 1
    error = _error(err)
    assert error["code"] == "MODEL_AUTH"
    assert error["details"]["status_code"] == 401
    assert "TINY_KEY" in error["message"]
    assert "wrong-key-1234" not in err


def test_cost_is_in_the_summary_and_the_envelope(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=1)
    with config.open("a") as fh:
        fh.write('\n[pricing."m"]\ninput = 1.0\noutput = 2.0\n')
    with ScriptedPolicyServer("multiply") as policy:
        args = ("eval", "run", str(config), "--base-url", policy.url, "--model", "m")
        code, out, _ = _cli(capsys, *args, "--name", "priced", "--json")
        assert code == 0
        cost = json.loads(out)["resource"]["metrics"]["cost"]
        assert cost["policy_usd"] > 0
        assert cost["judge_usd"] == 0.0
        code, out, _ = _cli(capsys, *args, "--name", "priced", "--plain")
    assert code == 0
    assert f"cost policy / judge / total: ${cost['policy_usd']:.4f} / $0.0000" in out
    assert "tokens in / cached / out / reasoning" in out


def test_unknown_cost_is_said_with_the_reason(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=1)
    with ScriptedPolicyServer("multiply") as policy:
        code, out, _ = _cli(
            capsys, "eval", "run", str(config), "--base-url", policy.url, "--model", "m", "--plain"
        )
    assert code == 0
    assert "cost policy / judge / total: unknown / $0.0000 / unknown" in out
    assert "cost unknown because: no price known for model 'm'" in out


def _load_safety_rollout() -> Any:
    import importlib.util
    import sys

    name = "osmosis_cli_tests_safety_rollout"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, TINY_ROLLOUT.with_name("safety_rollout.py")
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_require_append_only_exits_1_when_a_rollout_breaks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    safe = _load_safety_rollout().write_safety_workspace(tmp_path / "safe", ("safe", "subagents"))
    code, out, err = _cli(capsys, "eval", "run", str(safe), "--require-append-only", "--plain")
    assert code == 0, err
    assert "training safety: 2/2 rollouts append-only; token ids: 0/2 rows" in out
    assert "(not requested: enable with --token-ids (vLLM))" in out

    unsafe = _load_safety_rollout().write_safety_workspace(
        tmp_path / "unsafe", ("safe", "tool_args_reformatted")
    )
    args = ("eval", "run", str(unsafe), "--name", "u", "--plain")
    code, out, err = _cli(capsys, *args)
    assert code == 0, err  # without the flag a break is reported, not fatal
    assert (
        "1/2 rollouts append-only; 1 break it: 1 \N{MULTIPLICATION SIGN} tool_args_reformatted"
        in out
    )
    code, out, _ = _cli(capsys, *args, "--require-append-only")  # resumes: nothing left to run
    assert code == 1
    assert "1 break it" in out
    assert "failed --require-append-only" in out
    assert "finished" not in out  # the console does not contradict the exit code

    code, out, _ = _cli(capsys, "eval", "run", str(unsafe), "--name", "u", "--json",
                        "--require-append-only")  # fmt: skip
    assert code == 1
    envelope = json.loads(out)
    assert envelope["status"] == "failed"
    assert envelope["resource"]["stop_code"] == "append_only"


def test_no_check_mark_when_nothing_passed(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=2)
    with ScriptedPolicyServer(lambda body: Reply(content="#### 0")) as policy:
        code, out, err = _cli(
            capsys, "eval", "run", str(config), "--base-url", policy.url, "--model", "m"
        )
    assert code == 0, err  # graded, nothing failed: the run succeeded ...
    assert "nothing passed" in out
    assert "\N{CHECK MARK}" not in out  # ... but it is not marked as a success


def test_full_disk_names_the_file_and_the_resume_command(
    workspace: MakeWorkspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    import errno
    import os

    from osmosis_ai._util import append_only  # the journal appends through it

    class NoSpace:  # append_only's ``os``: every write fails as on a full file system
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        def write(self, fd: int, data: Any) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(append_only, "os", NoSpace())
    config = workspace(n_rows=1, mode="noop")
    where = ("--output", str(tmp_path / "runs"))
    code, _, err = _cli(capsys, "eval", "run", str(config), "--name", "full", *where, "--json")
    assert code == 1
    error = _error(err)
    assert error["code"] == "DISK_FULL"
    journal = Path(error["details"]["output_path"]) / "events.jsonl"
    assert error["details"]["path"] == str(journal)
    assert error["details"]["resumable"] is True
    assert str(journal) in error["message"]
    assert (
        f"Resume: osmosis eval run {config} --name full --runs-dir {where[1]}" in error["message"]
    )
    assert "OSError" not in err

    monkeypatch.setattr(append_only, "os", os)
    code, out, err = _cli(capsys, "eval", "run", str(config), "--name", "full", *where, "--json")
    assert code == 0, err
    assert json.loads(out)["resource"]["succeeded"] == 1


def test_max_cost_stops_the_run_with_exit_3_and_says_why(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=6)
    with config.open("a") as fh:  # the multiply policy reports no usage: price per call
        fh.write('\n[pricing."m"]\ninput = 1.0\noutput = 2.0\n')
    with ScriptedPolicyServer("multiply") as policy:
        args = ("eval", "run", str(config), "--base-url", policy.url, "--model", "m", "--yes")
        args += ("--name", "capped", "--max-in-flight", "1", "--workers", "1")
        code, out, _ = _cli(capsys, *args, "--max-cost", "0.0000001", "--json")
        assert code == 3
        resource = json.loads(out)["resource"]
        assert resource["stop_code"] == "budget"
        assert "cost budget reached" in resource["halt_reason"]
        assert resource["pending"] == 5  # the probe row ran, the next would not fit
        assert resource["metrics"]["budget"]["stopped"] is True
        code, out, _ = _cli(capsys, *args, "--max-cost", "0.0000001", "--plain")
        assert code == 3
        assert "stopped at its cost budget" in out
        assert "budget: $" in out
        code, out, _ = _cli(capsys, *args, "--max-cost", "10", "--plain")
    assert code == 0, out
    assert "budget: $" in out


def test_max_cost_without_a_price_names_the_pricing_entry_not_a_higher_budget(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=3)  # no [pricing."m"], and a server on 127.0.0.1 has no price
    with ScriptedPolicyServer("multiply") as policy:
        args = ("eval", "run", str(config), "--base-url", policy.url, "--model", "m", "--yes")
        args += ("--name", "unpriced", "--max-in-flight", "1", "--workers", "1")
        code, out, _ = _cli(capsys, *args, "--max-cost", "5", "--json")
    assert code == 3
    envelope = json.loads(out)
    resource = envelope["resource"]
    assert resource["stop_code"] == "budget"
    assert "cost is unknown" in resource["halt_reason"]
    assert '[pricing."m"]' in resource["halt_reason"]
    steps = [step["command"] for step in envelope["next_steps_structured"]]
    assert not any("higher" in step for step in steps), steps
    assert any(step.endswith("--max-cost 5") for step in steps), steps


#: EvalOptions fields without an `eval run` flag: the key is read from the environment only,
#: sampling comes from --temperature/--top-p/--max-tokens/--seed/--model-arg, and [env] and the
#: timeouts from the eval config.
_OPTIONS_WITHOUT_A_FLAG = {"api_key", "sampling", "env", "agent_timeout_sec", "grader_timeout_sec"}


def test_every_eval_option_is_a_flag_of_the_same_name_and_the_cli_builds_the_options() -> None:
    import inspect
    from dataclasses import fields

    from osmosis_ai.eval import EvalOptions
    from osmosis_cli.commands.eval_run import eval_options, run

    names = {f.name for f in fields(EvalOptions)}
    parameters = set(inspect.signature(run).parameters)
    assert names - _OPTIONS_WITHOUT_A_FLAG <= parameters
    assert not (_OPTIONS_WITHOUT_A_FLAG - {"sampling"}) & parameters
    options = eval_options(
        {"max_failures": 3, "output_dir": Path("runs"), "no_report": True, "yes": True},
        sampling={"seed": 7},
    )
    assert options == EvalOptions(max_failures=3, output_dir=Path("runs"), sampling={"seed": 7})


def _report_text(page: str) -> str:
    """Everything ``report.html`` embeds, its gzip+base64 blocks decoded."""
    import base64
    import gzip
    import re

    blobs = re.findall(r'<script type="application/octet-stream" id="[^"]+">([^<]*)</script>', page)
    return page + "".join(gzip.decompress(base64.b64decode(b)).decode() for b in blobs)


@pytest.mark.parametrize("secret", ["Qz7w", "Jx3Kv"])  # 4 and 5 characters
def test_short_secrets_are_masked_in_the_log_and_the_report(
    workspace: MakeWorkspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    secret: str,
) -> None:
    config = workspace(n_rows=1)
    config.write_text(
        config.read_text().replace("required = []", 'required = ["TINY_SHORT_SECRET"]')
    )
    upstream_key = secret[::-1]  # as long as the declared secret
    monkeypatch.setenv("TINY_SHORT_SECRET", secret)
    monkeypatch.setenv("TINY_UPSTREAM_KEY", upstream_key)
    message = f"rejected: secret={secret} key={upstream_key} end"
    with ScriptedPolicyServer(lambda body: ErrorReply(400, message)) as policy:
        code, out, err = _cli(
            capsys,
            *("eval", "run", str(config), "--base-url", policy.url, "--model", "m"),
            *("--api-key-env", "TINY_UPSTREAM_KEY", "--json"),
        )
    assert code == 1, err
    run_dir = Path(json.loads(out)["resource"]["output_path"])
    logs = (run_dir / "logs.txt").read_text()
    report = _report_text((run_dir / "report.html").read_text())
    for text in (logs, report):
        assert "rejected: secret=*** key=*** end" in text  # the failure is there, masked
        assert secret not in text
        assert upstream_key not in text


def test_a_rerun_of_a_finished_run_says_nothing_changed(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = workspace(n_rows=1, mode="noop")
    code, out, err = _cli(capsys, "eval", "run", str(config), "--name", "done", "--plain")
    assert code == 0, err
    run_dir = config.parents[2] / ".osmosis" / "evals" / "done"
    stamps = {p.name: p.stat().st_mtime_ns for p in run_dir.iterdir() if p.is_file()}
    code, out, err = _cli(capsys, "eval", "run", str(config), "--name", "done", "--plain")
    assert code == 0, err
    assert "no file changed" in out
    after = {p.name: p.stat().st_mtime_ns for p in run_dir.iterdir() if p.is_file()}
    assert {k: v for k, v in after.items() if k != "logs.txt"} == {
        k: v for k, v in stamps.items() if k != "logs.txt"
    }


def test_runs_dir_is_eval_runs_folder_and_o_is_its_deprecated_spelling(
    workspace: MakeWorkspace, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``-o`` names the file a command writes (eval report/info, rubric); eval run's folder is
    ``--runs-dir`` like eval show/list/compare/report. ``-o DIR`` still works, with a warning."""
    config = workspace(n_rows=1, mode="noop")
    code, out, err = _cli(capsys, "eval", "run", str(config), "--runs-dir", str(tmp_path / "a"),
                          "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["resource"]["output_path"].startswith(str(tmp_path / "a") + "/")
    assert "DEPRECATED_OPTION" not in err
    code, out, err = _cli(capsys, "eval", "run", str(config), "-o", str(tmp_path / "b"), "--json")
    assert code == 0, err
    assert json.loads(out)["resource"]["output_path"].startswith(str(tmp_path / "b") + "/")
    assert "DEPRECATED_OPTION" in err
    code, out, err = _cli(capsys, "eval", "run", "--help")
    assert "--runs-dir" in out
    assert " -o" not in out
