"""The workspace Agent Skills: one shipped source, one copy in a workspace, drift that keeps edits.

The source of every skill is ``templates/_workspace/skills/<name>/`` (``SKILL.md`` plus optional
``references/``). ``osmosis init`` writes them once into ``.agents/skills/`` and makes
``.claude/skills`` a relative symlink to it (a second, written copy where symlinks fail). The
manifest ``.agents/skills/.osmosis-skills.json`` records the CLI version and the sha256 of every
file as written, so ``osmosis skills update`` can tell an unedited file (safe to replace) from a
local edit (kept, or saved as ``<file>.orig`` with ``--force``). A workspace made by an older CLI
has no manifest: a file identical to any version an osmosis CLI shipped
(:mod:`osmosis_cli.scaffolding.skills_history`) counts as unedited. See docs/skills.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from osmosis_ai.atomic_file import write_atomic
from osmosis_cli.errors import CLIError, CLIErrorCode

AGENTS_SKILLS = ".agents/skills"
CLAUDE_SKILLS = ".claude/skills"
#: What ``.claude/skills`` is: a link to ``../.agents/skills`` (the default), or a written copy.
LINK_TARGET = "../.agents/skills"
MANIFEST = ".osmosis-skills.json"
MANIFEST_VERSION = 1
ORIG_SUFFIX = ".orig"

NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
#: Soft cap on a SKILL.md body (progressive disclosure: details go in references/).
MAX_BODY_LINES = 150

Status = Literal["current", "outdated", "locally-edited", "missing", "new-available"]
ClaudeLayout = Literal["symlink", "copy"]


# -- the shipped skills --------------------------------------------------------------------------


def skills_source() -> Path:
    """``templates/_workspace/skills`` of this installation."""
    from osmosis_cli.scaffolding.catalog import templates_root

    return templates_root() / "_workspace" / "skills"


@dataclass(frozen=True)
class ShippedSkill:
    name: str
    description: str
    #: skill-relative POSIX path (``SKILL.md``, ``references/x.md``) -> content
    files: dict[str, bytes]


def shipped_skills(source: Path | None = None) -> dict[str, ShippedSkill]:
    """Every skill this CLI ships, by name (front matter checked)."""
    from osmosis_cli.scaffolding.catalog import iter_files

    root = source or skills_source()
    skills: dict[str, ShippedSkill] = {}
    if not root.is_dir():
        return skills
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        files = {rel: path.read_bytes() for rel, path in iter_files(folder)}
        if "SKILL.md" not in files:
            continue
        meta = parse_front_matter(files["SKILL.md"].decode("utf-8"))
        skills[folder.name] = ShippedSkill(folder.name, meta.get("description", ""), files)
    return skills


# -- front matter ----------------------------------------------------------------------------------


class FrontMatterError(ValueError):
    pass


def split_front_matter(text: str) -> tuple[dict[str, str], str, int]:
    """``(front matter, body, line number where the body starts)`` of a SKILL.md.

    The Agent Skills front matter is a small YAML mapping of scalars; this reads plain, quoted
    and folded/literal (``>``/``|``) scalars, which is all a skill needs, without a YAML
    dependency. Anything else raises :class:`FrontMatterError` saying what is wrong.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError("SKILL.md must start with '---' (YAML front matter)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise FrontMatterError("front matter is not closed by a '---' line") from None
    meta: dict[str, str] = {}
    i = 1
    while i < end:
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        match = re.match(r"^([A-Za-z][\w-]*):(?:\s+(.*))?$", line)
        if match is None:
            raise FrontMatterError(f"front matter line {i + 1} is not 'key: value': {line!r}")
        key, value = match.group(1), (match.group(2) or "").strip()
        i += 1
        if value in (">", "|", ">-", "|-", ""):
            block: list[str] = []
            while i < end and (not lines[i].strip() or lines[i][:1] in (" ", "\t")):
                block.append(lines[i].strip())
                i += 1
            joiner = "\n" if value.startswith("|") else " "
            value = joiner.join(b for b in block if b) if value else " ".join(block).strip()
            if not value and not block:
                # a mapping or list under the key (e.g. metadata:): kept as an empty string
                value = ""
        elif value[:1] in ("'", '"'):
            quote = value[0]
            if len(value) < 2 or not value.endswith(quote):
                raise FrontMatterError(f"front matter value of {key!r} has an unclosed quote")
            value = value[1:-1]
            value = value.replace("''", "'") if quote == "'" else value.replace('\\"', '"')
        elif value.startswith(("[", "{")):
            pass  # flow collections (allowed-tools, metadata) are kept as written
        elif ": " in value or value.startswith(("*", "&", "!", "%", "@", "`")):
            raise FrontMatterError(
                f"front matter value of {key!r} needs quotes (it contains ': ' or starts with "
                f"a YAML indicator): {value!r}"
            )
        meta[key] = value
    body_start = end + 1
    return meta, "\n".join(lines[body_start:]), body_start + 1


def parse_front_matter(text: str) -> dict[str, str]:
    try:
        return split_front_matter(text)[0]
    except FrontMatterError:
        return {}


def front_matter_problems(folder_name: str, text: str) -> list[str]:
    """What is wrong with a SKILL.md for the Agent Skills format (empty when it is fine)."""
    try:
        meta, body, _ = split_front_matter(text)
    except FrontMatterError as exc:
        return [str(exc)]
    problems: list[str] = []
    name = meta.get("name", "")
    if not name:
        problems.append("front matter has no 'name'")
    else:
        if name != folder_name:
            problems.append(f"name {name!r} differs from its folder {folder_name!r}")
        if not NAME_PATTERN.match(name):
            problems.append(f"name {name!r} must be lower-case letters, digits and single hyphens")
        if len(name) > MAX_NAME:
            problems.append(f"name is {len(name)} characters (at most {MAX_NAME})")
    description = meta.get("description", "").strip()
    if not description:
        problems.append("front matter has no 'description' (say what it does and when to use it)")
    elif len(description) > MAX_DESCRIPTION:
        problems.append(f"description is {len(description)} characters (at most {MAX_DESCRIPTION})")
    body_lines = len(body.strip().splitlines())
    if body_lines > MAX_BODY_LINES:
        problems.append(
            f"body is {body_lines} lines (at most {MAX_BODY_LINES}): move details to references/"
        )
    return problems


# -- the manifest ----------------------------------------------------------------------------------


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


@dataclass
class Manifest:
    cli_version: str = ""
    claude_skills: ClaudeLayout | None = None
    #: ``<skill>/<file>`` -> sha256 of the file as osmosis wrote it
    files: dict[str, str] = field(default_factory=dict)

    @property
    def skills(self) -> set[str]:
        return {key.split("/", 1)[0] for key in self.files}

    def to_json(self) -> bytes:
        data = {
            "manifest_version": MANIFEST_VERSION,
            "cli_version": self.cli_version,
            "claude_skills": self.claude_skills,
            "files": dict(sorted(self.files.items())),
        }
        return (json.dumps(data, indent=2) + "\n").encode("utf-8")


def read_manifest(workspace: Path) -> Manifest | None:
    path = workspace / AGENTS_SKILLS / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = {str(k): str(v) for k, v in dict(data.get("files") or {}).items()}
        layout = data.get("claude_skills")
        return Manifest(
            cli_version=str(data.get("cli_version") or ""),
            claude_skills=layout if layout in ("symlink", "copy") else None,
            files=files,
        )
    except (ValueError, TypeError, AttributeError):
        return None  # unreadable: every file is judged against the shipped history instead


def _cli_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("osmosis-cli")
    except metadata.PackageNotFoundError:
        return "unknown"


# -- the workspace's skills ------------------------------------------------------------------------


def claude_layout(workspace: Path) -> ClaudeLayout | None:
    """What ``.claude/skills`` is: a symlink, a written copy, or absent (``None``)."""
    path = workspace / CLAUDE_SKILLS
    if path.is_symlink():
        return "symlink"
    if path.is_dir():
        return "copy"
    return None


def _roots(workspace: Path) -> list[Path]:
    """The folders holding skill files that osmosis maintains."""
    roots = [workspace / AGENTS_SKILLS]
    if claude_layout(workspace) == "copy":
        roots.append(workspace / CLAUDE_SKILLS)
    return roots


def _unedited_hashes(key: str, manifest: Manifest | None) -> set[str]:
    from osmosis_cli.scaffolding.skills_history import SHIPPED

    known = set(SHIPPED.get(key, ()))
    if manifest is not None and key in manifest.files:
        known.add(manifest.files[key])
    return known


@dataclass
class SkillState:
    name: str
    description: str
    status: Status
    edited: list[str] = field(default_factory=list)  # workspace-relative paths

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "status": self.status,
            "edited_files": self.edited,
        }


def skill_states(workspace: Path, source: Path | None = None) -> list[SkillState]:
    """The status of every shipped skill in ``workspace`` (and of installed ones no longer
    shipped, which are reported ``current``: osmosis leaves them alone)."""
    shipped = shipped_skills(source)
    manifest = read_manifest(workspace)
    roots = _roots(workspace)
    states: list[SkillState] = []
    for name, skill in shipped.items():
        present = [root for root in roots if (root / name).is_dir()]
        if not present:
            installed = manifest is not None and name in manifest.skills
            status: Status = "missing" if installed else "new-available"
            states.append(SkillState(name, skill.description, status))
            continue
        edited: list[str] = []
        outdated = False
        for root in roots:
            for rel, content in skill.files.items():
                key = f"{name}/{rel}"
                dest = root / name / rel
                if not dest.is_file():
                    outdated = True
                    continue
                current = dest.read_bytes()
                if current == content:
                    continue
                if sha256(current) in _unedited_hashes(key, manifest):
                    outdated = True
                else:
                    edited.append(dest.relative_to(workspace).as_posix())
        if edited:
            status = "locally-edited"
        elif outdated:
            status = "outdated"
        else:
            status = "current"
        states.append(SkillState(name, skill.description, status, edited))
    for name in sorted(_installed_names(workspace) - set(shipped)):
        description = ""
        path = workspace / AGENTS_SKILLS / name / "SKILL.md"
        if path.is_file():
            description = parse_front_matter(
                path.read_text(encoding="utf-8", errors="replace")
            ).get("description", "")
        states.append(SkillState(name, description, "current"))
    return states


def _installed_names(workspace: Path) -> set[str]:
    root = workspace / AGENTS_SKILLS
    if not root.is_dir():
        return set()
    return {p.name for p in root.iterdir() if (p / "SKILL.md").is_file()}


# -- writing -------------------------------------------------------------------------------------


@dataclass
class SkillsChange:
    """What an install or update did (or, with ``dry_run``, would do); paths workspace-relative."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    kept_edited: list[str] = field(default_factory=list)
    replaced_edited: list[str] = field(default_factory=list)  # with --force; <file>.orig saved
    claude_skills: ClaudeLayout | None = None
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.replaced_edited)

    def resource(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "kept_edited": self.kept_edited,
            "replaced_edited": self.replaced_edited,
            "claude_skills": self.claude_skills,
            "dry_run": self.dry_run,
        }


def install_skills(
    workspace: Path, *, symlinks: bool = True, source: Path | None = None
) -> SkillsChange:
    """``osmosis init``: add missing skill files (never replacing one), link ``.claude/skills``.

    Existing files are left exactly as they are, whatever their content; ``skills update``
    is what replaces outdated ones.
    """
    return _sync(
        workspace, mode="add", force=False, dry_run=False, symlinks=symlinks, source=source
    )


def update_skills(
    workspace: Path,
    *,
    force: bool = False,
    dry_run: bool = False,
    symlinks: bool = True,
    source: Path | None = None,
) -> SkillsChange:
    """``osmosis skills update``: replace unedited files, add new ones, keep (or ``force``) edits."""
    return _sync(
        workspace, mode="update", force=force, dry_run=dry_run, symlinks=symlinks, source=source
    )


def _sync(
    workspace: Path,
    *,
    mode: Literal["add", "update"],
    force: bool,
    dry_run: bool,
    symlinks: bool,
    source: Path | None,
) -> SkillsChange:
    workspace = workspace.resolve()
    shipped = shipped_skills(source)
    manifest = read_manifest(workspace)
    change = SkillsChange(dry_run=dry_run)
    agents_root = workspace / AGENTS_SKILLS
    _check_inside(workspace, agents_root)
    layout = claude_layout(workspace)
    if layout is None and dry_run:
        layout = "symlink" if symlinks else "copy"
    elif layout is None:
        layout = _make_claude_link(workspace, symlinks=symlinks)
    change.claude_skills = layout
    roots = [agents_root] + ([workspace / CLAUDE_SKILLS] if layout == "copy" else [])
    new_manifest = Manifest(cli_version=_cli_version(), claude_skills=layout)
    for name, skill in shipped.items():
        for rel, content in sorted(skill.files.items()):
            key = f"{name}/{rel}"
            written_hash: str | None = None
            for root in roots:
                dest = root / name / rel
                shown = dest.relative_to(workspace).as_posix()
                if dest.is_symlink() or (dest.exists() and not dest.is_file()):
                    change.kept_edited.append(shown)
                    continue
                if not dest.exists():
                    change.added.append(shown)
                    _write(dest, content, dry_run)
                    written_hash = sha256(content)
                    continue
                current = dest.read_bytes()
                if current == content:
                    written_hash = sha256(content)
                    continue
                unedited = sha256(current) in _unedited_hashes(key, manifest)
                if mode == "add":
                    # init never replaces; the baseline stays what osmosis wrote before, if known
                    if unedited:
                        written_hash = written_hash or sha256(current)
                    continue
                if unedited:
                    change.updated.append(shown)
                    _write(dest, content, dry_run)
                    written_hash = sha256(content)
                elif force:
                    change.replaced_edited.append(shown)
                    if not dry_run:
                        _write(dest.with_name(dest.name + ORIG_SUFFIX), current, False)
                    _write(dest, content, dry_run)
                    written_hash = sha256(content)
                else:
                    change.kept_edited.append(shown)
            if written_hash is None and manifest is not None and key in manifest.files:
                written_hash = manifest.files[key]  # an edited file keeps its old baseline
            if written_hash is not None:
                new_manifest.files[key] = written_hash
    if not dry_run:
        if manifest is not None:
            # skills osmosis installed that this CLI no longer ships keep their entries
            for key, value in manifest.files.items():
                if key.split("/", 1)[0] not in shipped:
                    new_manifest.files.setdefault(key, value)
        _write(agents_root / MANIFEST, new_manifest.to_json(), False)
    return change


def _write(dest: Path, content: bytes, dry_run: bool) -> None:
    if dry_run:
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(dest, content)


def _check_inside(workspace: Path, folder: Path) -> None:
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        existing.resolve().relative_to(workspace)
    except ValueError:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"Refusing to write skills: {folder.relative_to(workspace)} resolves outside the "
            f"workspace {workspace}. Replace the symlink with a folder.",
            details={"path": str(folder)},
        ) from None


def _make_claude_link(workspace: Path, *, symlinks: bool) -> ClaudeLayout:
    """Make ``.claude/skills`` a relative link to ``../.agents/skills``; ``copy`` if we cannot."""
    link = workspace / CLAUDE_SKILLS
    if link.parent.exists() and not link.parent.is_dir():
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"{link.parent.name} exists but is not a folder, so .claude/skills cannot be made; "
            "move it away and run the command again.",
            details={"conflicts": [link.parent.name]},
        )
    link.parent.mkdir(parents=True, exist_ok=True)
    (workspace / AGENTS_SKILLS).mkdir(parents=True, exist_ok=True)
    if symlinks:
        try:
            link.symlink_to(LINK_TARGET, target_is_directory=True)
            return "symlink"
        except (OSError, NotImplementedError):
            pass  # Windows without developer mode, some network file systems: write a copy
    link.mkdir(parents=True, exist_ok=True)
    return "copy"


def outdated_names(states: Iterable[SkillState]) -> list[str]:
    return [s.name for s in states if s.status in ("outdated", "missing", "new-available")]
