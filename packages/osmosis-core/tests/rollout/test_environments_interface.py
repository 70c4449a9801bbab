"""The environments interface in core: spec parsing, typed options, listing without adapters."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from osmosis_ai.rollout.integrations.environments import (
    EnvironmentSpec,
    EnvironmentSpecError,
    list_environments,
    typed_options,
)

FIELDS: dict[str, Any] = {
    "size": int,
    "ratio": float,
    "name": str,
    "flag": bool,
    "seed": int | None,
    "sizes": tuple[int, int],
    "extra": dict[str, int],
}


def test_options_take_the_types_of_their_fields() -> None:
    spec = EnvironmentSpec.parse(
        'harbor:y?size=3&ratio=0.5&name=a b&flag=yes&seed=none&sizes=[1,2]&extra={"k":1}'
    )
    assert typed_options(spec, FIELDS, what="Thing") == {
        "size": 3,
        "ratio": 0.5,
        "name": "a b",
        "flag": True,
        "seed": None,
        "sizes": (1, 2),
        "extra": {"k": 1},
    }


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("size=3.5", "option size='3.5' is not a valid int"),
        ("flag=maybe", "expected true or false"),
        ("sizes=[1,", "is not a valid tuple"),
        ("colour=red", "Thing has no option 'colour'; its options are"),
    ],
)
def test_a_bad_option_says_which_and_why(query: str, message: str) -> None:
    with pytest.raises(EnvironmentSpecError, match=message.replace("[", r"\[")):
        typed_options(EnvironmentSpec.parse(f"harbor:y?{query}"), FIELDS, what="Thing")


def test_specs_round_trip_with_sorted_options() -> None:
    spec = EnvironmentSpec.parse("reasoning-gym:leg_counting?size=3&seed=1")
    assert str(spec) == "reasoning-gym:leg_counting?seed=1&size=3"
    with pytest.raises(EnvironmentSpecError, match="given twice"):
        EnvironmentSpec.parse("reasoning-gym:a?x=1&x=2")


def _installed(module: str) -> bool:
    try:  # a missing optional leaf raises with its install hint instead of answering None
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(
    _installed("osmosis_ai.rollout.integrations.environments.inspect"),
    reason="the inspect adapter is installed here",
)
def test_a_source_that_is_not_installed_is_listed_with_its_install_command() -> None:
    (listing,) = list_environments(["inspect"])
    assert listing.environments == ()
    assert listing.missing is not None
    assert 'pip install "osmosis-ai[inspect]"' in listing.missing
