"""``osmosis quickstart [-w NAME]``: from nothing to a workspace clone and a first agent prompt.

Interactive by design (it asks questions), as in osmosis-ai 0.3.8:

1. sign in (the browser sign-in, unless a token is already stored or in ``OSMOSIS_TOKEN``);
2. pick the platform workspace (``-w NAME``, the one whose repository this folder is a clone
   of, the only one, or a choice);
3. check its setup (``GET /api/cli/quickstart``): a repository must be connected (else: where
   to connect it), and billing (a note when it is not ready);
4. clone the workspace repository with ``git`` unless this folder is already inside the clone;
5. ask what you want to do and hand over a prompt for your coding agent that starts from the
   workspace's Agent Skills; record the completion (``POST /api/cli/quickstart``).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Output
from osmosis_cli.platform.client import PlatformClient

INTENTS = {
    "eval": "Evaluate an agent on my task",
    "train": "Train a model on my task",
    "explore": "Just look around",
}
PROMPTS = {
    "eval": (
        "I want to evaluate a model on {task} in this osmosis workspace. Read AGENTS.md, then "
        "follow the evaluate-rollouts skill in .agents/skills: pick or create a rollout, run "
        "'osmosis eval run' locally with --model mock first, then with a real model, and show "
        "me the report before anything is submitted to the platform."
    ),
    "train": (
        "I want to train a model for {task} in this osmosis workspace. Read AGENTS.md, then use "
        "the skills in .agents/skills: settle the dataset (osmosis dataset validate), create the "
        "rollout (create-rollouts), evaluate it locally (evaluate-rollouts), and propose the "
        "training config before running 'osmosis train submit'."
    ),
}


def _signed_in_client(output: Output) -> PlatformClient:
    from osmosis_cli.platform.credentials import load_token, store_token
    from osmosis_cli.platform.settings import platform_url

    url = platform_url()
    token = load_token(url)
    if token is not None:
        output.progress(f"Signed in to {url} ({token.source}).")
        return PlatformClient(url, token.value)
    from osmosis_cli.platform.device_login import device_login

    grant = device_login(PlatformClient(url, ""), output)
    where = store_token(url, grant.token)
    output.progress(f"Signed in to {url}; token stored in the {where}.")
    return PlatformClient(url, grant.token)


def _clone_identity(folder: Path) -> str | None:
    """``owner/repo`` of the git clone ``folder`` is in (from its ``origin``), if any."""
    if shutil.which("git") is None:
        return None
    found = subprocess.run(
        ["git", "-C", str(folder), "remote", "get-url", "origin"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if found.returncode != 0:
        return None
    url = found.stdout.strip().removesuffix(".git").rstrip("/")
    parts = url.replace(":", "/").split("/")
    return "/".join(parts[-2:]).lower() if len(parts) >= 2 else None


def _pick_workspace(
    workspaces: list[dict[str, Any]], wanted: str | None, start: Path, output: Output
) -> dict[str, Any]:
    if not workspaces:
        raise CLIError(
            CLIErrorCode.WORKSPACE_REQUIRED,
            "Your account has no platform workspace yet; create one in the platform, then run "
            "'osmosis quickstart' again.",
        )
    if wanted is not None:
        found = next((w for w in workspaces if wanted in (w.get("name"), w.get("id"))), None)
        if found is None:
            names = ", ".join(str(w.get("name")) for w in workspaces)
            raise CLIError(
                CLIErrorCode.NOT_FOUND,
                f"No workspace {wanted!r}; yours: {names}.",
                details={"workspace": wanted},
            )
        return found
    here = _clone_identity(start)
    if here:
        for workspace in workspaces:
            if str(workspace.get("repo_full_name") or "").lower() == here:
                return workspace
    if len(workspaces) == 1:
        return workspaces[0]
    names = [str(w.get("name")) for w in workspaces]
    chosen = output.ask("Which workspace?", choices=names, default=names[0])
    return next(w for w in workspaces if w.get("name") == chosen)


def _clone(status: dict[str, Any], start: Path, output: Output) -> Path:
    full_name = str(status.get("repo_full_name") or "")
    if _clone_identity(start) == full_name.lower():
        top = subprocess.run(
            ["git", "-C", str(start), "rev-parse", "--show-toplevel"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return Path(top.stdout.strip() or start)
    url = status.get("clone_url")
    if not isinstance(url, str) or not url:
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform gave no clone URL.")
    if shutil.which("git") is None:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"git is needed to clone {full_name}; install git, then run 'osmosis quickstart' "
            "again.",
        )
    default = full_name.rsplit("/", 1)[-1] or "workspace"
    answer = output.ask("Clone the workspace repository into", default=default)
    target = (start / answer).resolve()
    if target.exists() and any(target.iterdir()):
        raise CLIError(
            CLIErrorCode.CONFLICT,
            f"{target} exists and is not empty; choose another folder.",
            details={"path": str(target)},
        )
    done = subprocess.run(
        ["git", "clone", "--quiet", url, str(target)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"git clone of {full_name} failed: {done.stderr.strip()[-300:]}. Check your git "
            "access to the repository, then run 'osmosis quickstart' again.",
        )
    output.progress(f"Cloned {full_name} into {target}.")
    return target


def run_quickstart(output: Output, *, workspace: str | None, start: Path | None = None) -> None:
    if not output.interactive:
        raise CLIError(
            CLIErrorCode.INTERACTIVE_REQUIRED,
            "quickstart asks questions, so it needs a terminal. In a script: 'osmosis auth login "
            "--token -', 'git clone <your workspace repository>', then 'osmosis doctor'.",
        )
    start = (start or Path.cwd()).resolve()
    client = _signed_in_client(output)
    listed = client.request("GET", "/api/cli/workspaces", params={"limit": 200})
    workspaces = [w for w in (listed or {}).get("items") or [] if isinstance(w, dict)]
    chosen = _pick_workspace(workspaces, workspace, start, output)
    ws_id = str(chosen.get("id"))
    status = client.request("GET", "/api/cli/quickstart", params={"workspace_id": ws_id})
    status = status if isinstance(status, dict) else {}
    if not status.get("repo_connected"):
        where = status.get("connect_url") or "the platform's Git settings"
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"Workspace {chosen.get('name')} has no repository connected yet. Connect one at "
            f"{where}, then run 'osmosis quickstart' again.",
            details={"workspace": chosen.get("name")},
        )
    clone_dir = _clone(status, start, output)
    if not status.get("billing_ready"):
        output.warn(
            "BILLING_NOT_READY",
            "Billing is not set up for this workspace: local evaluation works, platform runs "
            "will not start until it is.",
        )
    intent = output.ask(
        "What do you want to do? " + "; ".join(f"{k} = {v}" for k, v in INTENTS.items()),
        choices=list(INTENTS),
        default="eval",
    )
    task = output.ask("Describe your task in a few words") if intent in PROMPTS else None
    prompt = PROMPTS[intent].format(task=task) if task else None
    recorded = True
    try:
        client.request(
            "POST", "/api/cli/quickstart", json={"workspace_id": ws_id, "intent": intent}
        )
    except CLIError as error:
        recorded = False
        output.warn(
            "QUICKSTART_NOT_RECORDED",
            f"Setup is done; the platform was not told ({error.message}).",
        )
    lines = [f"cd {shlex.quote(str(clone_dir))}"] if clone_dir != start else []
    if prompt:
        lines.append("Open your coding agent there and paste this prompt:")
        lines.append(prompt)
    output.emit_operation(
        "quickstart",
        message=f"Workspace {chosen.get('name')} is ready in {clone_dir}.",
        resource={
            "workspace": {"id": ws_id, "name": chosen.get("name")},
            "repo_full_name": status.get("repo_full_name"),
            "workspace_directory": str(clone_dir),
            "billing_ready": bool(status.get("billing_ready")),
            "intent": intent,
            "task": task,
            "agent_prompt": prompt,
            "completion_recorded": recorded,
        },
        lines=lines,
        next_steps=["osmosis doctor", "osmosis template list"],
    )


__all__ = ["INTENTS", "run_quickstart"]
