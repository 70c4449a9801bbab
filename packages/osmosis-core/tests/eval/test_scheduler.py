"""Scheduler helpers not covered through whole runs."""

from __future__ import annotations

import uuid

from osmosis_ai.eval._impl.scheduler import _uuid4_hex


def test_rollout_ids_are_random_version_4_uuids_in_hex() -> None:
    ids = {_uuid4_hex() for _ in range(2000)}
    assert len(ids) == 2000
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
