"""One owner per piece of plumbing (issue 35, item 4): the guard.

Scans every ``packages/*/src`` tree and ``benchmarks/`` for plumbing written by hand outside
its owner module:

* serving an ASGI app (``uvicorn.Server(``, ``uvicorn.Config(``, ``uvicorn.run(``):
  :mod:`osmosis_ai._util.serving`;
* atomic writes and renames into place (``os.replace(``, ``os.rename(``, ``tmp.replace(``):
  :mod:`osmosis_ai.atomic_file`;
* backoff (exponential formulas over an attempt count, jitter drawn from the global ``random``,
  another class named ``RetryPolicy``): :mod:`osmosis_ai._util.backoff`;
* redaction (``[REDACTED]``, ``.replace(secret, ...)``, minimum secret lengths, URL user-info
  regexes): :mod:`osmosis_ai._util.redaction`;
* JSON lines to and from a supervised child (``json.dumps(...).encode() + b"\n"``,
  ``json.loads(... readline())``): :mod:`osmosis_ai._util.framing`.

Only code is scanned (comments and docstrings are blanked by the tokenizer; string literals stay).
An exception is listed in :data:`ALLOWED` with its reason. Each rule is proven able to fail on a
synthetic source string (``test_each_guard_catches_a_hand_rolled_copy``).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORE = "packages/osmosis-core/src/osmosis_ai"


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    owners: frozenset[str]


RULES = (
    Rule(
        "uvicorn",
        re.compile(r"\buvicorn\.(Server|Config|run)\("),
        frozenset({f"{CORE}/_util/serving.py"}),
    ),
    Rule(
        "atomic-write",
        re.compile(r"\bos\.(replace|rename)\(|\b\w*(tmp|part)\w*\.(replace|rename)\(\s*\w"),
        frozenset({f"{CORE}/atomic_file.py"}),
    ),
    Rule(
        "backoff",
        re.compile(
            r"\*\*\s*\(?\s*(attempt|retry|retries|failures|tries)\b"
            r"|\brandom\.(random|uniform)\(.*\b(delay|backoff|jitter|full|wait)\b"
            r"|\b(delay|backoff|full|wait)\b.*\brandom\.(random|uniform)\("
            r"|^\s*class\s+RetryPolicy\b"
        ),
        frozenset({f"{CORE}/_util/backoff.py"}),
    ),
    Rule(
        "redaction",
        re.compile(
            r"\[REDACTED\]"
            r"|\.replace\(\s*(secret|value|key|token|api_key)\w*\s*,"
            r"|_MIN_SECRET_LEN"
            r"|len\(\s*secret\w*\s*\)\s*>=|\bin secrets\b.*\blen\(\w+\)\s*>="
            r"|://\)\[\^/@"
        ),
        frozenset({f"{CORE}/_util/redaction.py"}),
    ),
    Rule(
        "framing",
        re.compile(
            r"json\.dumps\(.*\)\.encode\(\)\s*\+\s*b\"\\n\""
            r"|json\.loads\(\s*(await\s+)?[\w.]*readline\(\)"
        ),
        frozenset({f"{CORE}/_util/framing.py"}),
    ),
)

#: (rule, path) -> why this file may keep its own copy.
ALLOWED: dict[tuple[str, str], str] = {
    # The eval's rollout-server child may run under an older osmosis-core (``--isolated`` with
    # an older pin) that has no ``_util``: plain uvicorn is its fallback only.
    (
        "uvicorn",
        f"{CORE}/eval/_impl/local_server/bootstrap.py",
    ): "fallback for an older osmosis-core",
    # Same reason: the port file is written with the standard library.
    (
        "atomic-write",
        f"{CORE}/eval/_impl/local_server/bootstrap.py",
    ): "runs under an older osmosis-core",
    # ``osmosis rollout serve --reload``: uvicorn's reloader pickles the config into a child
    # process, so it must be ``uvicorn.run`` with plain arguments (docs/decisions.md).
    ("uvicorn", "packages/osmosis-cli/src/osmosis_cli/serving.py"): "uvicorn's reloader",
    # Script mode (a 0.3.x main.py that calls uvicorn.run in main()): the loader swaps
    # uvicorn.run for a stand-in that captures the app; it serves nothing itself.
    ("uvicorn", f"{CORE}/rollout/entrypoint.py"): "captures a 0.3.x script's uvicorn.run",
    # A validate hint that names the 0.3.x pattern (text, not a call).
    ("uvicorn", "packages/osmosis-cli/src/osmosis_cli/preflight/runner.py"): "hint text",
    # The eval proxy's retry numbers (serialized to its child process); delays come from Backoff.
    ("backoff", f"{CORE}/eval/_impl/proxy/calls.py"): "RetryPolicy holds numbers over Backoff",
    # The outbox's JSON lines are a journal on disk, not messages to a child process.
    ("framing", f"{CORE}/rollout/server/_impl/outbox.py"): "a file journal, not a child channel",
}


def source_files() -> list[Path]:
    files = [p for p in sorted((ROOT / "packages").glob("*/src/**/*.py"))]
    files += sorted((ROOT / "benchmarks").glob("**/*.py"))
    return [p for p in files if ".venv" not in p.parts]


def code_lines(source: str) -> list[str]:
    """``source`` as the tokenizer reads it, with what is not code blanked: comments and
    docstrings (a string that is a statement of its own). Other string literals stay, since some
    plumbing lives in them (``"[REDACTED]"``, a user-info regex). Text that does not tokenize is
    scanned as written."""
    lines = source.splitlines()
    blank: list[tuple[tuple[int, int], tuple[int, int]]] = []
    statement_start = True
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            docstring = token.type == tokenize.STRING and statement_start
            if token.type == tokenize.COMMENT or docstring:
                blank.append((token.start, token.end))
            if token.type in _STATEMENT_BOUNDARY:
                statement_start = True
            elif token.type not in _NOT_CODE:
                statement_start = False
    except (tokenize.TokenError, SyntaxError):
        return lines
    for (row, col), (end_row, end_col) in blank:
        for number in range(row, end_row + 1):
            line = lines[number - 1]
            start = col if number == row else 0
            stop = end_col if number == end_row else len(line)
            lines[number - 1] = line[:start] + " " * (stop - start) + line[stop:]
    return lines


_STATEMENT_BOUNDARY = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
_NOT_CODE = {tokenize.NL, tokenize.COMMENT, tokenize.ENCODING}


def violations(rule: Rule, source: str) -> list[int]:
    """Line numbers of ``source`` that ``rule`` flags in code (comments and docstrings are
    skipped: they may name the plumbing they describe)."""
    return [
        number for number, line in enumerate(code_lines(source), 1) if rule.pattern.search(line)
    ]


def test_the_scan_sees_every_package_and_the_benchmarks() -> None:
    files = {p.relative_to(ROOT).parts[:2] for p in source_files()}
    assert ("packages", "osmosis-core") in files
    assert ("packages", "osmosis-cli") in files
    assert ("packages", "osmosis-harbor") in files
    assert any(parts[0] == "benchmarks" for parts in files)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_plumbing_is_written_only_by_its_owner(rule: Rule) -> None:
    found: list[str] = []
    for path in source_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative in rule.owners or (rule.name, relative) in ALLOWED:
            continue
        lines = violations(rule, path.read_text(encoding="utf-8"))
        found += [f"{relative}:{n}" for n in lines]
    assert found == [], f"hand-rolled {rule.name} outside {sorted(rule.owners)}: {found}"


def test_every_allowance_is_still_needed() -> None:
    by_name = {rule.name: rule for rule in RULES}
    for (name, relative), reason in ALLOWED.items():
        source = (ROOT / relative).read_text(encoding="utf-8")
        assert violations(by_name[name], source), f"{relative} no longer needs: {reason}"


BAD = {
    "uvicorn": "    uvicorn.Server(uvicorn.Config(app)).run(sockets=[sock])\n",
    "atomic-write": "    tmp.write_text(data)\n    tmp.replace(path)\n",
    "backoff": "    return min(cap, base * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)\n",
    "redaction": "    for secret in secrets:\n        text = text.replace(secret, '[REDACTED]')\n",
    "framing": '    process.stdin.write(json.dumps(message).encode() + b"\\n")\n',
}
GOOD = {
    "uvicorn": "    run(uvicorn_server(uvicorn_config(app)), sockets=[sock])\n",
    "atomic-write": "    write_atomic(path, data)\n    name = name.replace('-', '_')\n",
    "backoff": "    return Backoff(base, cap).delay(attempt)\n",
    "redaction": "    text = Redactor(secrets)(text)\n",
    "framing": "    process.stdin.write(framing.encode(message))\n",
}
MORE_BAD = [
    ("atomic-write", "os.rename(part, dest)"),
    ("atomic-write", "os.replace(tmp, target)"),
    ("backoff", "delay = full / 2 + random.uniform(0, full / 2)"),
    ("backoff", "class RetryPolicy:"),
    ("redaction", "values = {s for s in secrets if s and len(s) >= 4}"),
    ("redaction", '_URL_USERINFO = re.compile(r"(\\w+://)[^/@\\s]+@")'),
    ("framing", "config = json.loads(await reader.readline())"),
]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_each_guard_catches_a_hand_rolled_copy(rule: Rule) -> None:
    assert violations(rule, BAD[rule.name])
    assert not violations(rule, GOOD[rule.name])


def test_comments_and_docstrings_are_not_code_but_string_literals_are() -> None:
    rule = next(rule for rule in RULES if rule.name == "uvicorn")
    source = (
        "def serve(app):\n"
        '    """Unlike ``uvicorn.run(app)``, this\n'
        '    serves on loopback: uvicorn.Server(config) is built by the owner."""\n'
        "    # uvicorn.run( would bind 0.0.0.0\n"
        '    return uvicorn.run(app, host="127.0.0.1")\n'
    )
    assert violations(rule, source) == [5]
    redaction = next(rule for rule in RULES if rule.name == "redaction")
    assert violations(redaction, 'MASK = "[REDACTED]"\n') == [1]


@pytest.mark.parametrize(("name", "line"), MORE_BAD)
def test_each_guard_catches_other_spellings(name: str, line: str) -> None:
    rule = next(rule for rule in RULES if rule.name == name)
    assert violations(rule, line)
