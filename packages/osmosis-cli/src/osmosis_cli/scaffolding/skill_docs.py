"""Reading the fenced code blocks of skill documents, for the checks that keep skills honest.

Used by the skill tests (docs/skills.md, "The test harness"): the static check walks every
``osmosis ...`` command of every shell block through the CLI's command tree, the TOML check
loads every ``toml`` block, and the executable-docs test runs the shell blocks in a fresh
workspace. One parser, so the three agree on what a block is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console"})
#: Words after the language in an info string that change how a shell block runs.
RUN_MODES = frozenset({"no-run", "expect-fail"})
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(?P<tag>[A-Za-z_][A-Za-z0-9_]*)\1")
SEPARATORS = frozenset({"&&", "||", "|", ";", "&", "|&", "(", ")", ";;"})
#: Words that run the command that follows them.
PREFIXES = frozenset({"time", "exec", "command", "env", "sudo", "nohup"})


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    modes: frozenset[str]
    text: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def is_shell(self) -> bool:
        return self.language in SHELL_LANGUAGES

    @property
    def runs(self) -> bool:
        return self.is_shell and "no-run" not in self.modes

    def script(self) -> str:
        """What to run: the block, or the ``$ `` lines of a console block."""
        if self.language != "console":
            return self.text
        return "\n".join(line for _, line in _console_lines(self.text))


def blocks(path: Path) -> list[Block]:
    """Every fenced code block of a markdown file, in order."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence = match.group("fence")
        words = match.group("info").strip().split()
        language = words[0].lower() if words else ""
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        out.append(Block(path, start + 1, language, frozenset(words[1:]), "\n".join(body)))
    return out


@dataclass(frozen=True)
class Command:
    line: int  # 1-based line in the file
    words: tuple[str, ...]  # ``osmosis`` and what follows, up to the next separator

    def __str__(self) -> str:
        return shlex.join(self.words)


def _console_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, command)`` of the ``$ `` lines of a console block (with their continuations)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            offset, command = i, line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command += "\n" + lines[i]
            yield offset, command
        i += 1


def logical_lines(block: Block) -> Iterator[tuple[int, str]]:
    """``(1-based file line, logical line)``: continuations joined, heredoc bodies skipped."""
    if block.language == "console":
        for offset, command in _console_lines(block.text):
            yield block.line + 1 + offset, command.replace("\\\n", " ")
        return
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i]
        i += 1
        tags = [m.group("tag") for m in HEREDOC.finditer(line)]
        for tag in tags:  # skip each heredoc body up to its terminator
            while i < len(lines) and lines[i].strip() != tag:
                i += 1
            i += 1
        yield block.line + 1 + start, line


def _words(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def osmosis_commands(block: Block) -> Iterator[Command]:
    """Every ``osmosis ...`` command of a shell block (after ``uv run``, ``VAR=x``, ``$(``...)."""
    for line_no, line in logical_lines(block):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        line = line.replace("$(", " ( ")
        try:
            words = _words(line)
        except ValueError as exc:
            raise ValueError(f"{block.path}:{line_no}: cannot parse {line!r}: {exc}") from None
        segment: list[str] = []
        for word in [*words, ";"]:
            if word in SEPARATORS or (set(word) <= set("<>&|;()") and word):
                yield from _osmosis_in(segment, line_no)
                segment = []
            else:
                segment.append(word)


def _osmosis_in(segment: list[str], line_no: int) -> Iterator[Command]:
    words = list(segment)
    while words:
        head = words[0]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", head) or head in PREFIXES:
            words.pop(0)
        elif head == "uv" and words[1:2] == ["run"]:
            words = words[2:]
            while words and words[0].startswith("-"):
                words.pop(0)  # uv run's own flags (--with x is rare in skills)
        else:
            break
    if words and words[0] == "osmosis":
        yield Command(line_no, tuple(words))


def skill_documents(skills_root: Path) -> list[Path]:
    """Every SKILL.md and ``references/*.md`` under a skills folder, in a stable order."""
    docs: list[Path] = []
    for folder in sorted(p for p in skills_root.iterdir() if p.is_dir()):
        if (folder / "SKILL.md").is_file():
            docs.append(folder / "SKILL.md")
        references = folder / "references"
        if references.is_dir():
            docs += sorted(references.rglob("*.md"))
    return docs
