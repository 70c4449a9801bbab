"""An optional on-disk cache of judge verdicts, so re-grading a finished run costs nothing.

The key is a SHA-256 over the judge model and endpoint, the full prompt (rubric, graded
solution, reference, metadata, system prompt) and every sampling parameter, so a change to any
of them is a miss. One small JSON file per verdict (``<dir>/<k[:2]>/<k>.json``), written to a
temporary name and renamed, so concurrent processes sharing a cache never see half a file.
Only successful verdicts are stored; failures are always retried. File I/O runs in a worker
thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from osmosis_ai.atomic_file import write_atomic

#: Set it to a directory to cache every judge call that was not given ``cache=`` explicitly.
CACHE_ENV = "OSMOSIS_JUDGE_CACHE"


def cache_key(payload: Mapping[str, Any]) -> str:
    encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


class JudgeCache:
    """A directory of cached verdicts (created on first write)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.directory)!r})"

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get_blocking(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def put_blocking(self, key: str, value: Mapping[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(dict(value), ensure_ascii=False), mode=0o600)

    async def get(self, key: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.get_blocking, key)

    async def put(self, key: str, value: Mapping[str, Any]) -> None:
        await asyncio.to_thread(self.put_blocking, key, value)


def resolve_cache(cache: JudgeCache | str | os.PathLike[str] | bool | None) -> JudgeCache | None:
    """``cache=`` as given: a cache, a directory, ``False`` (off), or ``None`` (``$OSMOSIS_JUDGE_CACHE``)."""
    if cache is False:
        return None
    if isinstance(cache, JudgeCache):
        return cache
    if cache is None or cache is True:
        directory = os.environ.get(CACHE_ENV, "").strip()
        if not directory:
            if cache is True:
                from osmosis_ai.rollout.home import osmosis_home

                return JudgeCache(osmosis_home() / "judge-cache")
            return None
        return JudgeCache(directory)
    return JudgeCache(cache)
