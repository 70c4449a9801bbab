"""The cost ledger: library prices, ``[pricing]`` overrides, "unknown" (never 0), judge apart."""

from __future__ import annotations

import subprocess
import sys

import pytest
from genai_prices import Usage, calc_price

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.eval._impl.cost.pricing import (
    ModelPrice,
    Pricer,
    RowPricer,
    parse_overrides,
    run_cost,
    token_split,
)
from osmosis_ai.eval.judge import Judge, collect_judge_usage
from osmosis_ai.testing import ScriptedPolicyServer
from osmosis_ai.testing.judge import scripted_judge

OPENAI = "https://api.openai.com/v1"
USAGE = {
    "prompt_tokens": 1000,
    "completion_tokens": 300,
    "prompt_tokens_details": {"cached_tokens": 400},
    "completion_tokens_details": {"reasoning_tokens": 120},
}


def test_openai_usage_is_split_into_input_cached_output_reasoning() -> None:
    assert token_split(USAGE) == {
        "input": 600,
        "cached_input": 400,
        "output": 300,
        "reasoning": 120,
    }
    assert token_split(None) == {"input": 0, "cached_input": 0, "output": 0, "reasoning": 0}


def test_known_model_is_priced_from_the_library() -> None:
    priced = Pricer().price("gpt-4.1-mini", token_split(USAGE), base_url=OPENAI)
    expected = calc_price(
        Usage(input_tokens=1000, cache_read_tokens=400, output_tokens=300),
        "gpt-4.1-mini",
        provider_id="openai",
    ).total_price
    assert priced.usd == pytest.approx(float(expected))
    assert priced.usd is not None
    assert priced.usd > 0
    assert priced.reason is None


def test_config_override_wins_over_the_library() -> None:
    overrides = parse_overrides(
        {"gpt-4.1-mini": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}
    )
    priced = Pricer(overrides).price("gpt-4.1-mini", token_split(USAGE), base_url=OPENAI)
    assert priced.usd == pytest.approx((600 * 1.0 + 400 * 0.5 + 300 * 2.0) / 1e6)


def test_unknown_model_is_unknown_never_zero() -> None:
    pricer = Pricer()
    local = pricer.price("Qwen/Qwen3-8B", token_split(USAGE), base_url="http://127.0.0.1:8000/v1")
    assert local.usd is None
    assert local.reason is not None
    assert "[pricing" in local.reason
    made_up = pricer.price("no-such-model-xyz", token_split(USAGE))
    assert made_up.usd is None
    # A row with no tokens spent costs nothing, whatever the model.
    assert pricer.price("no-such-model-xyz", token_split(None)).usd == 0.0


LOCAL_URLS = (
    "http://127.0.0.1:8000/v1",
    "http://localhost:30000/v1",
    "http://[::1]:8000/v1",
    "http://127.0.0.2/v1",
)


@pytest.mark.parametrize("url", LOCAL_URLS)
def test_a_server_on_this_machine_gets_the_answer_the_library_gives(url: str) -> None:
    split = token_split(USAGE)
    library = Usage(input_tokens=1000, cache_read_tokens=400, output_tokens=300)
    with pytest.raises(LookupError):  # the library has no provider for a loopback URL ...
        calc_price(library, "gpt-4.1-mini", provider_api_url=url)
    priced = Pricer().price("gpt-4.1-mini", split, base_url=url)  # ... so: unknown, same words
    assert priced.usd is None
    assert priced.reason == (
        "no price known for model 'gpt-4.1-mini'; add [pricing.\"gpt-4.1-mini\"] with input and "
        "output (USD per million tokens) to the eval config"
    )
    # A config override still prices it, and a hosted URL still goes to the library.
    overrides = parse_overrides({"gpt-4.1-mini": {"input": 1.0, "output": 2.0}})
    assert Pricer(overrides).price("gpt-4.1-mini", split, base_url=url).usd is not None
    assert Pricer().price("gpt-4.1-mini", split, base_url=OPENAI).usd is not None


def test_pricing_a_local_server_does_not_load_the_price_table() -> None:
    """The library's price table is a 1.6 MB module; loading it to learn that a server on this
    machine has no price costs ~80 MB for a moment where Python compiles it from source (the
    eval controller's start-up spike, issue 39). A fresh interpreter shows whether it loads."""
    code = (
        "import sys\n"
        "from osmosis_ai.eval._impl.cost.pricing import Pricer\n"
        "split = {'input': 10, 'cached_input': 0, 'output': 5}\n"
        "for url in ('http://127.0.0.1:8000/v1', 'http://localhost:1/v1'):\n"
        "    assert Pricer().price('m', split, base_url=url).usd is None\n"
        "print('genai_prices.data' in sys.modules)\n"
        "Pricer().price('gpt-4.1-mini', split, base_url='https://api.openai.com/v1')\n"
        "print('genai_prices.data' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert out == ["False", "True"]


def test_run_totals_are_unknown_when_one_row_is_unknown() -> None:
    known = RowPricer(Pricer({"m": ModelPrice(1.0, 2.0)}), "m", None)([USAGE], None)
    unknown = RowPricer(Pricer(), "nope-model-xyz", "http://127.0.0.1:1/v1")([USAGE], None)
    assert known["total_usd"] == pytest.approx((1000 * 1.0 + 300 * 2.0) / 1e6)
    assert unknown["policy_usd"] is None
    assert unknown["total_usd"] is None
    totals = run_cost([known, unknown])
    assert totals is not None
    assert totals["policy_usd"] is None
    assert totals["policy_known_usd"] == pytest.approx(known["policy_usd"])
    assert totals["unpriced_rows"] == 1
    assert "nope-model-xyz" in totals["unknown_reason"]
    assert totals["tokens"]["cached_input"] == 800


def test_judge_cost_is_reported_apart_from_policy_cost() -> None:
    pricer = RowPricer(Pricer({"m": ModelPrice(1.0, 2.0)}), "m", None)
    row = pricer([USAGE], {"calls": 2, "cost_usd": 0.25})
    assert row["policy_usd"] == pytest.approx(0.0016)
    assert row["judge_usd"] == 0.25
    assert row["total_usd"] == pytest.approx(0.2516)
    unpriced_judge = pricer([USAGE], {"calls": 1, "unpriced_calls": 1})
    assert unpriced_judge["policy_usd"] == pytest.approx(0.0016)
    assert unpriced_judge["judge_usd"] is None
    assert unpriced_judge["total_usd"] is None
    assert "judge" in unpriced_judge["unknown_reason"]
    # The run's reason names the judge model and no single row's count: rows with one and
    # with three unpriced judge calls give the same words.
    rows = [
        pricer([USAGE], {"calls": n, "unpriced_calls": n, "models": ["openai/x"]}) for n in (1, 3)
    ]
    assert rows[0]["unknown_reason"] == rows[1]["unknown_reason"]
    totals = run_cost(rows)
    assert totals is not None
    assert totals["unpriced_rows"] == 2
    assert totals["unknown_reason"] == (
        "judge calls with no known price (judge model openai/x); "
        "give the Judge prices=(input, output) in USD per million tokens"
    )


async def test_judge_on_an_unpriced_server_records_unknown_cost() -> None:
    async with ScriptedPolicyServer(scripted_judge(lambda a: 1.0)) as s:
        judge = Judge("openai/m", base_url=s.url)
        with collect_judge_usage() as usage:
            await judge.score(solution_str="a", rubric="Award 1.")
    assert usage.prompt_tokens > 0
    assert usage.cost_usd is None  # a local server: no price, and not $0
    assert usage.unpriced_calls == 1
    assert usage.as_dict()["unpriced_calls"] == 1


@pytest.mark.parametrize(
    "entry",
    [{"input": 1.0}, {"input": -1, "output": 1}, {"input": 1, "output": 1, "typo": 2}],
)
def test_bad_pricing_entries_say_what_to_write(entry: dict[str, float]) -> None:
    with pytest.raises(ConfigurationError, match=r"\[pricing"):
        parse_overrides({"m": entry})
