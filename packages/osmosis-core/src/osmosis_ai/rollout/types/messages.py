"""Message aliases and the one reading of a message's text.

Chat messages travel as plain dicts in the OpenAI chat-completions shape. Their ``content`` is a
string, ``None``, or a list of content parts (``{"type": "text", "text": ...}``, images, ...);
:func:`content_text` is the single place that turns any of those into text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

MessageDict = dict[str, Any]
Messages = list[dict[str, Any]]


def content_text(content: Any, *, keep_non_text: bool = False) -> str:
    """The text of a message ``content``: a string, ``None``, or a list of parts.

    Text parts (and bare strings in the list) are joined with newlines. A non-text part (an image,
    audio) is skipped, or kept as its JSON when ``keep_non_text`` is true (readers that show a
    transcript must not hide what the model was sent); any other value is ``str()``-ed, or its JSON
    with ``keep_non_text``.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence) or isinstance(content, (bytes, bytearray)):
        return json.dumps(content, default=str) if keep_non_text else str(content)
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping):
            text = part.get("text")
            if isinstance(text, str):
                parts.append(text)
            elif keep_non_text:
                parts.append(json.dumps(part, default=str))
    return "\n".join(parts)
