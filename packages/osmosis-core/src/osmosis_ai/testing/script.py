"""Reply scripts: the offline policy for your own task, without writing a server.

``osmosis eval run ... --model mock --mock-script replies.jsonl`` (or
``ScriptedPolicyServer(load_reply_script("replies.jsonl"))`` in a test) answers each model call
from a script instead of the built-in multiply solver. A script is either

* a **JSONL file**, one object per line, each with the replies for one prompt::

      {"row": 0, "replies": [{"tool_calls": [{"name": "search", "arguments": {"q": "Paris"}}]},
                             "The capital is Paris."]}
      {"prompt": "What is 2 + 2?", "replies": ["4"]}
      {"replies": ["I don't know."]}

  ``row`` is a 0-based dataset row (what ``--rows`` counts), ``prompt`` the text of the row's
  first user message, and a line with neither is the default for every other prompt. The
  ``replies`` are the policy's turns in order, each a string (assistant text), an object
  ``{"content", "tool_calls", "reasoning"}`` or ``{"error": 503, "body": "..."}`` (see
  :func:`~osmosis_ai.testing.replies.reply_from_json`). A call is matched to its prompt by its
  first user message, and its turn is the number of assistant messages already in its history,
  so concurrent rollouts and ``n`` samples per row each replay the script from the start;
* a **Python file** defining ``respond(body)`` (or ``file.py:function``): called with each
  chat-completions request body, it returns a string, a ``Reply``, an ``ErrorReply`` or a JSON
  reply object (sync or async).

A call the script has no reply for (an unknown prompt, or more turns than scripted) is answered
with HTTP 400 saying which (a status the eval proxy does not retry), so the rollout fails at
once as ``http_error`` with that message.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osmosis_ai._util.jsonl import json_object_lines
from osmosis_ai.errors import ConfigurationError
from osmosis_ai.testing.replies import ErrorReply, Reply, as_reply, reply_from_json
from osmosis_ai.testing.responders import message_text

__all__ = ["ReplyScript", "ReplyScriptError", "load_reply_script"]

type ScriptResponder = Callable[[dict[str, Any]], Coroutine[Any, Any, Reply | ErrorReply]]
_PREVIEW = 80


class ReplyScriptError(ConfigurationError, ValueError):
    """The reply script cannot be read; the message names the file, the line and the fix."""


def first_user_text(messages: object) -> str | None:
    """The text of the first ``user`` message (what a script line's ``prompt`` matches)."""
    if not isinstance(messages, list):
        return None
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") == "user":
            return message_text(message).strip()
    return None


def _preview(text: str) -> str:
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 3] + "..."


@dataclass(frozen=True, slots=True)
class ReplyScript:
    """Scripted turns per prompt (first user message text), plus an optional default."""

    source: str
    by_prompt: Mapping[str, tuple[Reply | ErrorReply, ...]]
    default: tuple[Reply | ErrorReply, ...] | None = None

    def __call__(self, body: dict[str, Any]) -> Reply | ErrorReply:
        messages = body.get("messages")
        prompt = first_user_text(messages) or ""
        replies = self.by_prompt.get(prompt, self.default)
        if replies is None:
            return ErrorReply(
                400,
                f"reply script {self.source} has no replies for the prompt {_preview(prompt)!r} "
                "(its first user message): add a line "
                '{"row": <index>, "replies": [...]} or {"prompt": "...", "replies": [...]}, '
                'or a default line {"replies": [...]}',
            )
        turn = sum(
            1 for m in messages or [] if isinstance(m, Mapping) and m.get("role") == "assistant"
        )
        if turn >= len(replies):
            return ErrorReply(
                400,
                f"reply script {self.source} has {len(replies)} replies for the prompt "
                f"{_preview(prompt)!r}, and the agent asked for turn {turn + 1}: "
                "add the missing replies",
            )
        return replies[turn]


def load_reply_script(
    path: str | Path, *, rows: Sequence[Sequence[Mapping[str, Any]]] | None = None
) -> ScriptResponder:
    """The responder a :class:`~osmosis_ai.testing.ScriptedPolicyServer` takes, from a script.

    ``path`` is a ``.jsonl`` reply script or a ``.py`` file (``file.py:function``; default
    function ``respond``). ``rows`` are the dataset rows' initial messages by 0-based index,
    needed for ``row`` keys. Raises :class:`ReplyScriptError` saying what is wrong.
    """
    text = str(path)
    file, _, function = text.partition(".py:")
    if function or text.endswith(".py"):
        return _python_responder(Path(file + ".py" if function else text), function or "respond")
    script = parse_reply_script(Path(text), rows=rows)

    async def respond(body: dict[str, Any]) -> Reply | ErrorReply:
        return script(body)

    return respond


def script_digest(path: str | Path) -> str:
    """The sha256 of the script's file (``file.py:function`` reads ``file.py``)."""
    text = str(path)
    file, _, function = text.partition(".py:")
    return hashlib.sha256(Path(file + ".py" if function else text).read_bytes()).hexdigest()


def parse_reply_script(
    path: Path, *, rows: Sequence[Sequence[Mapping[str, Any]]] | None = None
) -> ReplyScript:
    """Read a JSONL reply script; see the module docstring for the format."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ReplyScriptError(f"cannot read the reply script {path}: {exc.strerror}") from exc
    by_prompt: dict[str, tuple[Reply | ErrorReply, ...]] = {}
    origin: dict[str, int] = {}
    default: tuple[Reply | ErrorReply, ...] | None = None
    expected = 'an object {"row" or "prompt", "replies"}'
    for number, where, entry in json_object_lines(lines, path, ReplyScriptError, expected=expected):
        key, replies = _parse_entry(entry, where, rows)
        if key is None:
            if default is not None:
                raise ReplyScriptError(f"{where}: a second default line (no row, no prompt)")
            default = replies
            continue
        if key in by_prompt:
            raise ReplyScriptError(
                f"{where}: the prompt {_preview(key)!r} already has replies (line "
                f"{origin[key]}); rows with the same first user message share one script line"
            )
        by_prompt[key], origin[key] = replies, number
    if not by_prompt and default is None:
        raise ReplyScriptError(f"the reply script {path} has no lines")
    return ReplyScript(source=path.name, by_prompt=by_prompt, default=default)


def _parse_entry(
    entry: dict[str, Any], where: str, rows: Sequence[Sequence[Mapping[str, Any]]] | None
) -> tuple[str | None, tuple[Reply | ErrorReply, ...]]:
    unknown = sorted(set(entry) - {"row", "prompt", "replies"})
    if unknown or ("row" in entry and "prompt" in entry):
        raise ReplyScriptError(
            f'{where}: a line has "replies" and at most one of "row" or "prompt"'
            + (f"; unknown key(s): {', '.join(unknown)}" if unknown else "")
        )
    raw = entry.get("replies")
    if not isinstance(raw, list) or not raw:
        raise ReplyScriptError(f'{where}: "replies" must be a non-empty list of replies')
    try:
        replies = tuple(reply_from_json(item) for item in raw)
    except ValueError as exc:
        raise ReplyScriptError(f"{where}: {exc}") from exc
    if "prompt" in entry:
        if not isinstance(entry["prompt"], str):
            raise ReplyScriptError(f'{where}: "prompt" must be the first user message text')
        return entry["prompt"].strip(), replies
    if "row" in entry:
        return _row_prompt(entry["row"], where, rows), replies
    return None, replies


def _row_prompt(row: object, where: str, rows: Sequence[Sequence[Mapping[str, Any]]] | None) -> str:
    if rows is None:
        raise ReplyScriptError(
            f'{where}: "row" keys need the dataset (osmosis eval run supplies it); '
            'key the line by "prompt" instead'
        )
    if not isinstance(row, int) or isinstance(row, bool) or not 0 <= row < len(rows):
        raise ReplyScriptError(
            f'{where}: "row" must be a 0-based dataset row from 0 to {len(rows) - 1}, got {row!r}'
        )
    prompt = first_user_text(list(rows[row]))
    if prompt is None:
        raise ReplyScriptError(f"{where}: dataset row {row} has no user message to match")
    return prompt


def _python_responder(file: Path, name: str) -> ScriptResponder:
    if not file.is_file():
        raise ReplyScriptError(f"the reply script {file} does not exist")
    spec = importlib.util.spec_from_file_location(f"_osmosis_reply_script_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise ReplyScriptError(f"cannot load {file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ReplyScriptError(f"importing the reply script {file} failed: {exc!r}") from exc
    function = getattr(module, name, None)
    if not callable(function):
        raise ReplyScriptError(
            f"the reply script {file} defines no function {name}(body) (pass file.py:function "
            "to name another)"
        )

    async def respond(body: dict[str, Any]) -> Reply | ErrorReply:
        value = function(body)
        if inspect.isawaitable(value):
            value = await value
        return reply_from_json(value) if isinstance(value, dict) else as_reply(value)

    return respond
