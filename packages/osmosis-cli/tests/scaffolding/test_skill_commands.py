"""Every ``osmosis ...`` command in every skill exists, with every flag it uses (docs/skills.md).

The check walks the real command tree (:func:`osmosis_cli.cli_app.build_root`), so a renamed
command or flag fails here with the file and line of the skill that still uses the old one.
It reads whatever is under ``templates/_workspace/skills/``: a new skill needs no edit here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from osmosis_cli.scaffolding.skill_docs import (
    Block,
    blocks,
    logical_lines,
    osmosis_commands,
    skill_documents,
)
from osmosis_cli.scaffolding.skills import skills_source

HELP = frozenset({"-h", "--help"})


@pytest.fixture(scope="module")
def root() -> Any:
    from osmosis_cli.cli_app import build_root

    return build_root()


def _option(command: Any, name: str) -> Any | None:
    for param in command.params:
        if getattr(param, "param_type_name", "") == "option" and name in (
            *param.opts,
            *param.secondary_opts,
        ):
            return param
    return None


def unknown_words(root: Any, words: Sequence[str]) -> list[str]:
    """What in ``osmosis ...`` (``words[0] == "osmosis"``) the CLI would not accept."""
    from osmosis_cli.main import GLOBAL_FLAGS, VALUE_FLAGS

    rest: list[str] = []
    items = iter(words[1:])
    for word in items:  # global options go anywhere (main.py takes them out first)
        name = word.split("=", 1)[0]
        if word == "--":
            rest += [word, *items]
        elif word in GLOBAL_FLAGS:
            continue
        elif name in VALUE_FLAGS:
            if "=" not in word:
                next(items, None)
        else:
            rest.append(word)
    command, path, problems = root, ["osmosis"], []
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if word == "--":
            break
        if word.startswith("-") and word != "-":
            name = word.split("=", 1)[0]
            if name in HELP:
                continue
            param = _option(command, name)
            if param is None:
                problems.append(f"`{' '.join(path)}` has no option {name}")
            elif not param.is_flag and not param.count and "=" not in word:
                i += 1  # its value
            continue
        if hasattr(command, "list_commands"):
            sub = command.get_command(None, word)
            if sub is None:
                problems.append(f"`{' '.join(path)}` has no command {word!r}")
                break
            command = sub
            path.append(word)
    return problems


def problems_in(root: Any, document: Path) -> tuple[list[str], int]:
    """``(file:line problems, number of osmosis commands checked)`` of one markdown file."""
    problems: list[str] = []
    checked = 0
    for block in blocks(document):
        if not block.is_shell:
            continue
        for command in osmosis_commands(block):
            checked += 1
            for problem in unknown_words(root, command.words):
                problems.append(f"{document}:{command.line}: {problem} (in: {command})")
    return problems, checked


def _documents() -> list[Path]:
    return skill_documents(skills_source())


def test_every_skill_command_and_flag_exists(root: Any) -> None:
    documents = _documents()
    assert documents, f"no skills found under {skills_source()}"
    problems: list[str] = []
    checked = 0
    for document in documents:
        found, count = problems_in(root, document)
        problems += found
        checked += count
    assert problems == [], "skills use commands or flags the CLI does not have:\n" + "\n".join(
        problems
    )
    assert checked >= 10, f"only {checked} osmosis commands found in the skills' shell blocks"


def test_every_skill_has_a_runnable_shell_block() -> None:
    for skill_md in _documents():
        if skill_md.name != "SKILL.md":
            continue
        runnable = [b for b in blocks(skill_md) if b.runs]
        assert runnable, f"{skill_md}: no runnable ```bash block (docs/skills.md)"


PLACEHOLDER = re.compile(r"<[A-Za-z][\w-]*>")
QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")


def placeholders_in(document: Path) -> list[str]:
    """Unquoted ``<name>``-style placeholders in blocks that run (bash reads them as
    redirections): they need shell variables instead. Heredoc bodies and quoted text are fine."""
    problems = []
    for block in blocks(document):
        if not block.runs:
            continue
        for line_no, line in logical_lines(block):
            found = PLACEHOLDER.findall(QUOTED.sub("", line))
            if found:
                problems.append(
                    f"{document}:{line_no}: {', '.join(found)} in a block that runs: use a "
                    'shell variable (NAME=calc ... "$NAME"), or mark the block `bash no-run` '
                    "(docs/skills.md)"
                )
    return problems


def test_runnable_blocks_have_no_placeholders() -> None:
    problems = [p for document in _documents() for p in placeholders_in(document)]
    assert problems == [], "\n".join(problems)


def test_the_placeholder_check_names_file_and_line(tmp_path: Path) -> None:
    document = tmp_path / "SKILL.md"
    document.write_text(
        "```bash\nosmosis rollout init <name>\necho 'as <n>' \"<m>\"\ncat > x <<'E'\n<body>\nE\n"
        "```\n```bash no-run\nosmosis x <y>\n```\n",
        encoding="utf-8",
    )
    problems = placeholders_in(document)
    assert len(problems) == 1
    assert problems[0].startswith(f"{document}:2: <name> in a block that runs")


BOGUS = """\
# A skill

```bash
NAME=calc
osmosis --json eval run configs/eval/$NAME.toml --limit 2 | tee out.json
osmosis eval runn configs/eval/$NAME.toml
osmosis rollout validate configs/eval/x.toml \\
  --no-such-flag
uv run osmosis template apply multiply-local-strands --force && osmosis doctor --fixx
cat > data/x.jsonl <<'EOF'
osmosis this-is-data --not-checked
EOF
```

```console
$ osmosis skills list --json
name  status
$ osmosis skills update --dry-runn
```

```text
osmosis not-a-command-in-text
```
"""


def test_the_check_reports_a_bogus_command_and_flag_with_file_and_line(
    root: Any, tmp_path: Path
) -> None:
    document = tmp_path / "SKILL.md"
    document.write_text(BOGUS, encoding="utf-8")
    problems, checked = problems_in(root, document)
    assert checked == 7
    assert problems == [
        f"{document}:6: `osmosis eval` has no command 'runn' "
        "(in: osmosis eval runn 'configs/eval/$NAME.toml')",
        f"{document}:7: `osmosis rollout validate` has no option --no-such-flag "
        "(in: osmosis rollout validate configs/eval/x.toml --no-such-flag)",
        f"{document}:9: `osmosis doctor` has no option --fixx (in: osmosis doctor --fixx)",
        f"{document}:18: `osmosis skills update` has no option --dry-runn "
        "(in: osmosis skills update --dry-runn)",
    ]


def test_console_blocks_run_only_their_prompt_lines(tmp_path: Path) -> None:
    document = tmp_path / "SKILL.md"
    document.write_text(BOGUS, encoding="utf-8")
    console = next(b for b in blocks(document) if b.language == "console")
    assert console.script() == "osmosis skills list --json\nosmosis skills update --dry-runn"
    assert [b.language for b in blocks(document)] == ["bash", "console", "text"]


def test_info_string_modes(tmp_path: Path) -> None:
    document = tmp_path / "x.md"
    document.write_text(
        "```bash no-run\nosmosis rollout serve rollouts/x/main.py\n```\n"
        "```bash expect-fail\nfalse\n```\n",
        encoding="utf-8",
    )
    serve, failing = blocks(document)
    assert isinstance(serve, Block)
    assert not serve.runs
    assert serve.is_shell
    assert failing.runs
    assert failing.modes == frozenset({"expect-fail"})
