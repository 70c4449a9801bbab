"""``RolloutProgress``: an ``on_status`` observer that raises is logged, never in charge."""

from __future__ import annotations

import logging

import pytest

from osmosis_ai.rollout import RolloutProgress, RolloutStatus


def _raise(status: RolloutStatus) -> None:
    raise RuntimeError(f"observer broke on {status}")


async def _raise_async(status: RolloutStatus) -> None:
    raise RuntimeError(f"async observer broke on {status}")


@pytest.mark.parametrize("observer", [_raise, _raise_async], ids=["sync", "async"])
async def test_a_raising_observer_does_not_escape_set_status(
    observer: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 38 item 6 (0.3.8 logs and continues)."""
    progress = RolloutProgress(on_status=observer)  # type: ignore[arg-type]
    changed = progress.changed
    with caplog.at_level(logging.WARNING, logger="osmosis_ai.rollout.context"):
        await progress.set_status(RolloutStatus.RUNNING)
        await progress.set_status(RolloutStatus.SUCCESS)
    assert progress.status is RolloutStatus.SUCCESS
    assert changed.is_set()  # waiters were woken before the observer ran
    assert caplog.text.count("rollout status observer failed") == 2
