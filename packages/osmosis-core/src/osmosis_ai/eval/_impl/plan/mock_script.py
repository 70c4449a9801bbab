"""``--mock-script``: the mock policy answers from the user's reply script.

The script format and its loader belong to :mod:`osmosis_ai.testing.script`; this module only
checks the flag against ``--model`` and attaches the loaded script to the run's upstream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from osmosis_ai.eval._impl.proxy.upstream import MOCK_MODEL, Upstream, UpstreamError

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.plan.dataset import DatasetRow
    from osmosis_ai.testing.script import ScriptResponder


def mock_script_model(model: str | None, base_url: str | None) -> str:
    """The model a run with ``--mock-script`` uses: ``mock`` (the flag implies it)."""
    if (model is not None and model.strip() != MOCK_MODEL) or base_url is not None:
        raise UpstreamError(
            "--mock-script scripts the offline mock policy: use it with --model mock (or without "
            "--model), not with another model or --base-url"
        )
    return MOCK_MODEL


def attach_mock_script(
    upstream: Upstream, script: str | Path, rows: Sequence[DatasetRow]
) -> tuple[Upstream, ScriptResponder]:
    """Load ``script`` (row keys resolved against the dataset's ``rows``); raises
    :class:`~osmosis_ai.testing.script.ReplyScriptError` when it cannot be used."""
    from osmosis_ai.testing.script import load_reply_script, script_digest

    text = str(script)
    file, sep, function = text.partition(".py:")
    resolved = str(Path(file + ".py" if sep else text).resolve()) + (f":{function}" if sep else "")
    responder = load_reply_script(resolved, rows=[row.initial_messages for row in rows])
    attached = replace(upstream, mock_script=resolved, mock_script_sha256=script_digest(resolved))
    return attached, responder
