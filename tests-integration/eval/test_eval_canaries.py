"""No credential reaches a run's files, the server home or the CLI's output (issue 39, item 5).

Canary secrets of 4, 5, 8 and 40 characters play every credential of a real ``osmosis eval
run`` (the ``rubric-judge-local`` template, a scripted policy and a scripted judge over real
HTTP): the judge's key (``OPENAI_API_KEY``), which the judge echoes in a 401 that ends in a
saved traceback; a ``--base-url`` query key and user-info password, which the policy echoes
into its answer as a Basic credential and as the bare key; a rollout secret. Then ``eval
report`` and ``eval show``. The canary must appear in no file under the run folder or the
osmosis home, and in no output, in any encoding a file or a log could carry it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from eval_support import Cli

from osmosis_ai.testing import ScriptedPolicyServer, error_reply, text_reply

TEMPLATE = "rubric-judge-local"
CANARIES = {
    4: "Zq7x",
    5: "Zq7xW",
    8: "Zq7xW3kP",
    40: "Zq7xW3kP" + "Vb9mRt2LcYh5Ns8Qd4Jf6Gk1Xw3Pz7Ta",
}


def _forms(secret: str) -> set[str]:
    return {secret, quote(secret, safe=""), json.dumps(secret)[1:-1]}


def _files_containing(root: Path, forms: set[str]) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for form in forms:
                at = data.find(form.encode())
                if at >= 0:
                    context = data[max(at - 160, 0) : at + 40].decode(errors="replace")
                    hits.append(f"{path.relative_to(root)}: ...{context}")
                    break
    return hits


@pytest.mark.parametrize("length", sorted(CANARIES))
def test_a_canary_secret_reaches_no_file_and_no_output(
    cli: Cli, tmp_path: Path, length: int
) -> None:
    canary = CANARIES[length]
    basic = base64.b64encode(f"user:{canary}".encode()).decode()

    def policy(body: Mapping[str, Any]) -> Any:
        # An upstream that echoes the caller's credentials into what it answers.
        return text_reply(f"Answer. (debug: Authorization: Basic {basic}; key={canary}; {canary})")

    def judge(body: Mapping[str, Any]) -> Any:
        return error_reply(401, f"Incorrect API key provided: {canary}. Check your key.")

    root = tmp_path / "ws"
    root.mkdir()
    assert cli.run("init", str(root), cwd=tmp_path).code == 0
    assert cli.run("template", "apply", TEMPLATE, cwd=root).code == 0
    data = root / "data" / "rows.jsonl"
    data.write_text(
        "".join(json.dumps({"user_prompt": f"q{i}", "ground_truth": "a"}) + "\n" for i in range(3)),
        encoding="utf-8",
    )
    config = root / "configs" / "eval" / f"{TEMPLATE}.toml"
    outputs: list[str] = []
    env = {"OPENAI_API_KEY": canary, "ROLLOUT_SECRET_TOKEN": canary}
    with (
        ScriptedPolicyServer(policy, max_recorded=0) as upstream,
        ScriptedPolicyServer(judge, max_recorded=0) as judge_server,
    ):
        host = upstream.url.removeprefix("http://")
        base_url = f"http://user:{canary}@{host}/v1?key={canary}"
        env["OSMOSIS_JUDGE_BASE_URL"] = judge_server.url
        result = cli.run(
            "eval", "run", str(config), "--dataset", str(data), "--name", "canary",
            "--base-url", base_url, "--model", "scripted", "--json",
            cwd=root, env=env, timeout=300,
        )  # fmt: skip
        outputs.append(result.stdout + result.stderr)
        for extra in (["--plain"], []):
            again = cli.run(
                "eval", "run", str(config), "--dataset", str(data), "--name", "canary-plain",
                "--base-url", base_url, "--model", "scripted", *extra,
                cwd=root, env=env, timeout=300,
            )  # fmt: skip
            outputs.append(again.stdout + again.stderr)
    resource = json.loads(result.stdout.strip().splitlines()[-1])
    run_dir = Path(
        (resource.get("resource") or resource.get("error", {}).get("details") or {}).get(
            "output_path", ""
        )
        or next((root / ".osmosis").rglob("metrics.json")).parent
    )
    assert (run_dir / "metrics.json").is_file(), result.stderr
    index = (run_dir / "index.jsonl").read_text()
    assert "judge" in index.lower() or "401" in index  # the judge's failure was saved
    report = cli.run("eval", "report", str(run_dir), cwd=root, env=env)
    outputs.append(report.stdout + report.stderr)
    shown = cli.run("eval", "show", str(run_dir), "--json", cwd=root, env=env)
    outputs.append(shown.stdout + shown.stderr)

    forms = _forms(canary) | {basic}
    for output in outputs:
        assert not any(form in output for form in forms), output[-2000:]
    assert _files_containing(root, forms) == []  # the run folders (and the workspace)
    assert _files_containing(cli.home, forms) == []  # the osmosis home (server home)
