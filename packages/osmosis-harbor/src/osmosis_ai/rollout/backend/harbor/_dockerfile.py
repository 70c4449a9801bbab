"""What the local sandbox can honour of a task's ``environment/Dockerfile``, and what it cannot.

The local sandbox has no container runtime: the host's userland stands in for the base image
(``FROM`` and ``[environment] docker_image``) when that is an official Docker Hub image (a
generic userland such as ``ubuntu`` or ``python``); an image of an organisation or another
registry carries the task's own files and is unsupported. Everything else is either replayed at sandbox start,
in Dockerfile order, or named as the reason the task cannot run faithfully:

- honoured: ``WORKDIR`` (the default directory of every command; ``[environment] workdir`` in
  ``task.toml`` overrides it, as in Harbor), ``ENV`` (set for every command), ``ARG`` defaults,
  ``COPY``/``ADD`` of files from the build context (``environment/``; ``ADD`` unpacks local
  archives), and ``RUN`` steps that need no network (run in the sandbox, in order);
- ignored because Harbor overrides or does not use them: ``CMD``, ``EXPOSE``, ``LABEL``,
  ``HEALTHCHECK``, ``VOLUME``, ``STOPSIGNAL``, ``SHELL``, ``USER`` (commands run as the calling
  user), ``MAINTAINER``, ``ONBUILD``;
- unsupported (the trial fails with :class:`UnsupportedEnvironmentError` naming each step):
  ``RUN`` steps that install or download (package managers, ``curl``, ``wget``, ``git clone``...),
  ``ENTRYPOINT`` (a service the container would start), ``COPY --from`` (another build stage or
  image), ``ADD`` of a URL, and ``docker-compose.yaml`` environments.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from osmosis_ai.errors import BackendError

_NETWORK_COMMANDS = frozenset(
    {
        "apt-get", "apt", "aptitude", "apk", "yum", "dnf", "microdnf", "zypper", "pacman",
        "pip", "pip3", "pipx", "uv", "uvx", "poetry", "pdm", "conda", "mamba", "micromamba",
        "npm", "npx", "yarn", "pnpm", "bun", "gem", "bundle", "cargo", "curl", "wget",
        "add-apt-repository",
    }
)  # fmt: skip
_NETWORK_SUBCOMMANDS = {
    "git": {"clone", "fetch", "pull", "submodule", "ls-remote"},
    "go": {"get", "install", "mod"},
}
_SEPARATORS = re.compile(r"&&|\|\||[;|&()]|\n")
_VARIABLE = re.compile(r"\$(?:\{(\w+)(?::?-([^}]*))?\}|(\w+))")
_ARCHIVE = re.compile(r"\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz)$")
_IGNORED = frozenset(
    {"CMD", "EXPOSE", "LABEL", "HEALTHCHECK", "VOLUME", "STOPSIGNAL", "SHELL", "USER",
     "MAINTAINER", "ONBUILD", "COMMENT"}
)  # fmt: skip


class UnsupportedEnvironmentError(BackendError):
    """The task's environment needs something the local sandbox cannot provide."""


@dataclass(frozen=True, slots=True)
class Step:
    """One replayed Dockerfile instruction."""

    kind: Literal["workdir", "copy", "add", "run"]
    line: int
    text: str  # the instruction as written, for messages
    sources: tuple[Path, ...] = ()
    target: str = ""  # workdir / copy destination (absolute)
    command: str = ""
    cwd: str = "/"
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class ImagePlan:
    """What the sandbox replays: steps in order, the final workdir and environment."""

    steps: list[Step] = field(default_factory=list)
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    unsupported: list[str] = field(default_factory=list)

    def check(self) -> None:
        if self.unsupported:
            raise UnsupportedEnvironmentError(
                "the local sandbox cannot run this task faithfully (it has no container "
                "runtime and no image build): "
                + "; ".join(self.unsupported)
                + ". Run the task with OSMOSIS_HARBOR_ENV=docker or skypilot, or bake what "
                "it needs into the host"
            )


def _substitute(text: str, context: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match[1] or match[3]
        default = match[2]
        value = context.get(name)
        if value is None or (value == "" and default is not None):
            return default or ""
        return value

    return _VARIABLE.sub(replace, text)


def needs_network(command: str) -> str | None:
    """The first command word of a shell line that downloads or installs, else ``None``."""
    for part in _SEPARATORS.split(command):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        while words and ("=" in words[0] or words[0] in ("sudo", "env", "exec", "time")):
            words = words[1:]
        if not words:
            continue
        name = PurePosixPath(words[0]).name
        if name in ("python", "python3") and words[1:3] == ["-m", "pip"]:
            return "python -m pip"
        if name in _NETWORK_COMMANDS:
            return name
        sub = _NETWORK_SUBCOMMANDS.get(name)
        if sub is not None and len(words) > 1 and words[1] in sub:
            return f"{name} {words[1]}"
    return None


def _arguments(value: str) -> list[str]:
    if value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return [str(v) for v in parsed]
    return shlex.split(value)


def _pairs(value: str) -> dict[str, str]:
    words = shlex.split(value)
    if words and "=" not in words[0]:  # legacy form: ENV KEY value with spaces
        return {words[0]: " ".join(words[1:])}
    return dict(word.split("=", 1) for word in words if "=" in word)


def _absolute(path: str, workdir: str) -> str:
    joined = PurePosixPath(workdir) / path
    return os.path.normpath(str(joined)) + ("/" if path.endswith("/") else "")


class _Planner:
    def __init__(self, context_dir: Path, base_env: dict[str, str]) -> None:
        self.context_dir = context_dir
        self.base_env = base_env
        self.plan = ImagePlan()
        self.args: dict[str, str] = {}
        self.workdir = "/"
        self.stages: dict[str, tuple[ImagePlan, str]] = {}

    def _context(self) -> dict[str, str]:
        return {**self.base_env, **self.args, **self.plan.env}

    def add(self, instruction: str, value: str, line: int, text: str) -> None:
        plan = self.plan
        where = f"line {line}: {text}"
        if instruction == "FROM":
            self._stage(_substitute(value, self._context()), where)
        elif instruction == "ARG":
            name, _, default = value.partition("=")
            self.args.setdefault(name.strip(), _substitute(default.strip(), self._context()))
        elif instruction == "ENV":
            for key, raw in _pairs(value).items():
                plan.env[key] = _substitute(raw, self._context())
        elif instruction == "WORKDIR":
            self.workdir = _absolute(_substitute(value.strip(), self._context()), self.workdir)
            self.workdir = self.workdir.rstrip("/") or "/"
            plan.workdir = self.workdir
            plan.steps.append(Step("workdir", line, text, target=self.workdir))
        elif instruction in ("COPY", "ADD"):
            self._copy(instruction, value, line, text)
        elif instruction == "RUN":
            command = value.strip()
            tool = needs_network(command)
            if tool is not None:
                plan.unsupported.append(f"{where} (RUN needs the network: {tool})")
            else:
                env = dict(plan.env)
                plan.steps.append(
                    Step("run", line, text, command=command, cwd=self.workdir, env=env)
                )
        elif instruction == "ENTRYPOINT":
            plan.unsupported.append(f"{where} (ENTRYPOINT starts a service at container start)")
        elif instruction not in _IGNORED:
            plan.unsupported.append(f"{where} (instruction {instruction} is not supported)")

    def _stage(self, value: str, where: str) -> None:
        """A new build stage. Only the last one is the image; a stage built ``FROM`` an
        earlier one continues it, and any other base must be a generic userland."""
        words = [w for w in value.split() if not w.startswith("--")]
        image = words[0] if words else ""
        alias = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
        if image in self.stages:
            self.plan, self.workdir = self.stages[image]
        else:
            self.plan = ImagePlan()
            self.workdir = "/"
            problem = base_image_problem(image)
            if problem is not None:
                self.plan.unsupported.append(f"{where} ({problem})")
        if alias:
            self.stages[alias] = (self.plan, self.workdir)

    def _copy(self, instruction: str, value: str, line: int, text: str) -> None:
        where = f"line {line}: {text}"
        words = _arguments(_substitute(value, self._context()))
        flags = [w for w in words if w.startswith("--")]
        paths = [w for w in words if not w.startswith("--")]
        if any(f.startswith("--from") for f in flags):
            self.plan.unsupported.append(f"{where} (COPY --from needs another build stage)")
            return
        if len(paths) < 2:
            self.plan.unsupported.append(f"{where} ({instruction} needs a source and a target)")
            return
        sources: list[Path] = []
        for raw in paths[:-1]:
            if re.match(r"^[a-z]+://", raw):
                self.plan.unsupported.append(f"{where} (ADD of a URL needs the network)")
                return
            matches = sorted(self.context_dir.glob(raw.lstrip("/"))) if raw.strip("/") else []
            if raw.strip("/.") == "":
                matches = [self.context_dir]
            if not matches:
                self.plan.unsupported.append(f"{where} ({raw} is not in environment/)")
                return
            sources.extend(matches)
        target = _absolute(paths[-1], self.workdir)
        if len(sources) > 1 and not target.endswith("/"):
            target += "/"
        kind: Any = "add" if instruction == "ADD" else "copy"
        self.plan.steps.append(Step(kind, line, text, sources=tuple(sources), target=target))


def base_image_problem(image: str) -> str | None:
    """Why the host's userland cannot stand in for ``image``, or ``None`` when it can.

    Official Docker Hub images (``ubuntu:24.04``, ``python:3.12-slim``, ``library/debian``) are
    generic userlands; an image under an organisation or another registry
    (``ghcr.io/org/task:1``, ``swebench/sweb.eval...``) carries the task's own files.
    """
    head, _, last = image.split("@", 1)[0].rpartition("/")
    parts = [*(head.split("/") if head else []), last.split(":", 1)[0]]
    if parts[0] in ("docker.io", "index.docker.io"):
        parts = parts[1:]
    if parts and parts[0] == "library":
        parts = parts[1:]
    if len(parts) == 1 and parts[0] and parts[0] != "scratch":
        return None
    return f"the host's userland cannot stand in for the base image {image}"


def plan_image(
    environment_dir: Path,
    base_env: dict[str, str] | None = None,
    docker_image: str | None = None,
) -> ImagePlan:
    """Read ``environment/Dockerfile`` (if any) into an :class:`ImagePlan`; without one, the
    task's prebuilt ``docker_image`` (``task.toml``) must be a generic userland too."""
    planner = _Planner(environment_dir, dict(base_env or {}))
    # Whole-environment problems, added to the *final* plan: each FROM starts a new stage's
    # plan, so anything recorded before the Dockerfile is read would be lost with it.
    compose = [
        f"environment/{name} (multi-container services need a container runtime)"
        for name in ("docker-compose.yaml", "docker-compose.yml")
        if (environment_dir / name).is_file()
    ]
    dockerfile = environment_dir / "Dockerfile"
    if not dockerfile.is_file():
        problem = base_image_problem(docker_image) if docker_image else None
        if problem is not None:
            planner.plan.unsupported.append(f"[environment] docker_image ({problem})")
        planner.plan.unsupported[:0] = compose
        return planner.plan
    from dockerfile_parse import DockerfileParser

    parser = DockerfileParser(path=str(dockerfile), env_replace=False)
    for item in parser.structure:
        instruction = str(item["instruction"]).upper()
        text = " ".join(str(item["content"]).replace("\\\n", " ").split())
        planner.add(instruction, str(item["value"]), int(item["startline"]) + 1, text)
    planner.plan.unsupported[:0] = compose
    return planner.plan


def is_archive(path: Path) -> bool:
    return path.is_file() and _ARCHIVE.search(path.name) is not None
