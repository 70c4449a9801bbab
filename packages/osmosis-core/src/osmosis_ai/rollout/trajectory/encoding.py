"""The JSON text of a trajectory document: :func:`dumps_trajectory`.

One top-level key per line and one step per line, every piece through the C encoder.
"""

from __future__ import annotations

import json
import json.encoder as _json_encoder
from collections.abc import Callable, Mapping
from typing import Any

_fallback_encode = json.JSONEncoder(ensure_ascii=False, default=str, separators=(", ", ": ")).encode


def _piece_encoder() -> Callable[[Any], str]:
    """An encoder for the pieces of one document, equal to ``_fallback_encode`` piece by piece.

    ``JSONEncoder.encode`` builds a new C encoder on every call; a document has a dozen pieces,
    so building one per document and calling it directly cuts the encoding CPU by a third
    (20 -> 14 µs for a five-message rollout). It is the
    same C encoder with the same arguments ``JSONEncoder`` passes (``default=str``, no ASCII
    escaping, circular-reference check, NaN/Infinity allowed). One per document, because a
    failed encode can leave entries in its circular-reference markers.
    """
    make = _c_make_encoder
    if make is None:  # no C accelerator (e.g. PyPy)
        return _fallback_encode
    chunks = make({}, str, _encode_string, None, ": ", ", ", False, False, True)

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return _encode_string(value)
        return "".join(chunks(value, 0))

    return encode


_encode_string: Callable[[str], str] = _json_encoder.encode_basestring
_c_make_encoder: Callable[..., Any] | None = getattr(_json_encoder, "c_make_encoder", None)


def dumps_trajectory(document: Mapping[str, Any]) -> str:
    """JSON with one top-level key per line and one step per line.

    Readable with ``less`` or ``jq``, and fast: every piece goes through the C encoder
    (``indent=`` would switch to the pure-Python one, several times slower), and token-id and
    logprob arrays stay on their step's line instead of one number per line.
    """
    encode = _piece_encoder()
    parts = ["{\n"]
    last = len(document) - 1
    for index, (key, value) in enumerate(document.items()):
        parts.append(f"  {encode(key)}: ")
        if key == "steps" and isinstance(value, list) and value:
            parts.append("[\n    ")
            parts.append(",\n    ".join([encode(step) for step in value]))
            parts.append("\n  ]")
        else:
            parts.append(encode(value))
        parts.append(",\n" if index < last else "\n")
    parts.append("}\n")
    return "".join(parts)
