"""The rollout service stays a slim owner of collaborators (issue 35).

``RolloutService`` owns the registry and the executions; admission, leases and long polls, the
drain, delivery and retention are collaborators with their own state. These checks keep it so:
no mixins back (classes re-declaring each other's methods for the type checker), and a cap on
the service module so a new concern becomes a new collaborator rather than more service.
"""

from __future__ import annotations

import inspect

from osmosis_ai.rollout.server._impl import service
from osmosis_ai.rollout.server._impl.admission import Admission
from osmosis_ai.rollout.server._impl.drain import Drain
from osmosis_ai.rollout.server._impl.polling import Leases
from osmosis_ai.rollout.server._impl.service import RolloutService

#: The service module's size cap in lines (it was 458 when the mixins became collaborators).
SERVICE_MODULE_CAP = 480


def test_the_service_composes_collaborators_instead_of_inheriting_mixins() -> None:
    assert RolloutService.__bases__ == (object,)
    for collaborator in (Admission, Leases, Drain):
        assert collaborator.__bases__ == (object,), collaborator


def test_the_service_module_stays_under_its_cap() -> None:
    lines = len(inspect.getsource(service).splitlines())
    assert lines <= SERVICE_MODULE_CAP, (
        f"server/_impl/service.py has {lines} lines (cap {SERVICE_MODULE_CAP}): move the new "
        "concern into a collaborator of its own"
    )
