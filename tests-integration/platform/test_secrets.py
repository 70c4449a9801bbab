"""``secret set | list | delete``: the value reaches the platform and nothing else."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from platform_harness import Cli, CliResult, Platform  # pyright: ignore[reportMissingImports]
from stand_in_state import Fault  # pyright: ignore[reportMissingImports]


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_secret_value_never_appears_in_output_logs_or_files(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    value = f"sv-{uuid.uuid4().hex}"
    cli.env.update(OSMOSIS_TOKEN=platform.token, MY_KEY=value, OSMOSIS_DEBUG="1")
    results: list[CliResult] = []
    for mode in ("--json", "--plain"):
        result = cli(mode, "secret", "set", "OPENAI_API_KEY", "--env", "MY_KEY", cwd=tmp_path)
        assert result.code == 0, result.stderr
        results.append(result)
    assert results[0].envelope()["resource"]["name"] == "OPENAI_API_KEY"
    # A platform that echoes the value in an error: the CLI scrubs it.
    platform.state.faults.append(
        Fault("PUT", "/api/cli/secrets/", 422, message=f"value {value} is not accepted")
    )
    echoed = cli("--json", "secret", "set", "JUDGE_KEY", "--env", "MY_KEY", cwd=tmp_path)
    assert echoed.code == 1
    assert "value *** is not accepted" in echoed.error()["error"]["message"]
    results.append(echoed)
    results.append(cli("--json", "secret", "list", cwd=tmp_path))
    results.append(cli("--plain", "secret", "list", cwd=tmp_path))

    for result in results:
        assert value not in result.stdout + result.stderr
    assert _files_containing(tmp_path, value.encode()) == []  # home, config, cwd: nothing
    sent = [r.body for r in platform.state.requests if r.method == "PUT"]
    assert sent[0] == {"value": value, "scope": "personal"}  # it did reach the platform
    assert platform.state.secrets[("personal", "OPENAI_API_KEY")]["value"] == value


def test_set_needs_a_value_source_and_a_valid_name(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    no_tty = cli("--json", "secret", "set", "OPENAI_API_KEY", cwd=tmp_path)
    assert no_tty.error()["error"]["code"] == "INTERACTIVE_REQUIRED"
    assert no_tty.error()["error"]["details"]["flags"] == ["--env"]
    unset = cli("--json", "secret", "set", "OPENAI_API_KEY", "--env", "NOT_SET_X", cwd=tmp_path)
    assert unset.error()["error"]["code"] == "VALIDATION"
    lower = cli("--json", "secret", "set", "lower", "--env", "HOME", cwd=tmp_path)
    assert lower.error()["error"]["code"] == "VALIDATION"
    assert platform.state.requests == []


def test_list_by_scope_and_delete(cli: Cli, platform: Platform, tmp_path: Path) -> None:
    cli.env.update(OSMOSIS_TOKEN=platform.token, V="v1")
    for name, scope in (("A_KEY", "personal"), ("B_KEY", "workspace")):
        cli("--json", "secret", "set", name, "--env", "V", "--scope", scope, cwd=tmp_path)
    every = cli("--json", "secret", "list", cwd=tmp_path).envelope()["items"]
    assert [(s["name"], s["scope"]) for s in every] == [
        ("A_KEY", "personal"),
        ("B_KEY", "workspace"),
    ]
    assert all("value" not in s for s in every)
    shared = cli("--json", "secret", "list", "--scope", "workspace", cwd=tmp_path).envelope()
    assert [s["name"] for s in shared["items"]] == ["B_KEY"]
    deleted = cli("--json", "secret", "delete", "B_KEY", "--scope", "workspace", "-y", cwd=tmp_path)
    assert deleted.envelope()["operation"] == "secret.delete"
    missing = cli("--json", "secret", "delete", "B_KEY", "--scope", "workspace", "-y", cwd=tmp_path)
    assert missing.error()["error"]["code"] == "NOT_FOUND"


def _encodings(value: str) -> set[str]:
    """The forms a platform could echo a value in: as is, JSON-escaped, URL-quoted, repr."""
    import json
    from urllib.parse import quote, quote_plus

    return {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        quote(value, safe=""),
        quote_plus(value),
        repr(value)[1:-1],
    }


def test_an_echoed_secret_is_masked_escaped_or_in_the_error_field(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    """The platform echoes the value JSON-escaped in its message and verbatim in ``field``, and
    URL-quoted in a second error: the CLI prints none of these forms, in any output mode."""
    import json
    from urllib.parse import quote

    value = f'sv-"q\\u/é {uuid.uuid4().hex}'
    cli.env.update(OSMOSIS_TOKEN=platform.token, MY_KEY=value)
    platform.state.faults.extend(
        [
            Fault(
                "PUT",
                "/api/cli/secrets/",
                422,
                times=2,
                message=f"value {json.dumps(value)} is not accepted",
                field=value,
            ),
            Fault("PUT", "/api/cli/secrets/", 400, times=2, message=f"bad: {quote(value)}"),
        ]
    )
    outputs = []
    for mode in ("--json", "--plain", "--json", "--plain"):
        result = cli(mode, "secret", "set", "JUDGE_KEY", "--env", "MY_KEY", cwd=tmp_path)
        assert result.code == 1
        outputs.append(result.stdout + result.stderr)
    for output in outputs:
        for form in _encodings(value):
            assert form not in output, (form, output)
    assert "***" in outputs[0]


def test_the_token_is_not_sent_after_a_redirect_to_another_origin(
    cli: Cli, platform: Platform, tmp_path: Path
) -> None:
    """The platform answers ``secret list`` with 307 to the same port under another host name
    (another origin): the redirected request carries no Authorization, so the token never
    reaches that origin (which answers 401)."""
    other_origin = platform.url.replace("127.0.0.1", "localhost")
    cli.env.update(OSMOSIS_TOKEN=platform.token)
    platform.state.faults.append(Fault("GET", "/api/cli/secrets", 307, redirect_to=other_origin))
    result = cli("--json", "secret", "list", cwd=tmp_path)
    assert result.code == 1
    first, redirected = platform.state.requests[:2]
    assert first.headers["authorization"] == f"Bearer {platform.token}"
    assert redirected.headers["host"].startswith("localhost")
    assert "authorization" not in redirected.headers
    assert platform.token not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "canary", ["Zq7x", "Zq7xW", "Zq7xW3kP", "Zq7xW3kP" + "Vb9mRt2LcYh5Ns8Qd4Jf6Gk1Xw3Pz7Ta"]
)
def test_a_canary_secret_of_any_length_is_never_printed(
    cli: Cli, platform: Platform, tmp_path: Path, canary: str
) -> None:
    """Canaries of 4, 5, 8 and 40 characters, echoed as is, escaped and in ``field``."""
    from urllib.parse import quote

    cli.env.update(OSMOSIS_TOKEN=platform.token, MY_KEY=canary)
    platform.state.faults.append(
        Fault("PUT", "/api/cli/secrets/", 422, times=2, message=f"{quote(canary)}", field=canary)
    )
    outputs = []
    for mode in ("--json", "--plain"):
        result = cli(mode, "secret", "set", "JUDGE_KEY", "--env", "MY_KEY", cwd=tmp_path)
        outputs.append(result.stdout + result.stderr)
    stored = cli("--json", "secret", "set", "JUDGE_KEY", "--env", "MY_KEY", cwd=tmp_path)
    assert stored.code == 0
    outputs.append(stored.stdout + stored.stderr)
    for output in outputs:
        assert canary not in output
    assert _files_containing(tmp_path, canary.encode()) == []
