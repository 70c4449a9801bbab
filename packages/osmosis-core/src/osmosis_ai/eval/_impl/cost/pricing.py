"""What a model call costs: the one owner of prices for policy and judge calls.

Prices come from ``genai-prices`` (Pydantic's maintained, versioned table of hosted models'
prices, shipped as data inside the wheel: no network at runtime), unless the eval config's
``[pricing."<model>"]`` table (USD per million tokens) overrides them, which is how self-hosted
or negotiated prices are given. When neither knows the model the cost is *unknown*: ``None``
with a reason, never ``0``.

Token split (OpenAI's ``usage`` shape, which every OpenAI-compatible server reports):
``input`` (prompt tokens not served from cache), ``cached_input``
(``prompt_tokens_details.cached_tokens``), ``output`` (``completion_tokens``, reasoning
included) and ``reasoning`` (``completion_tokens_details.reasoning_tokens``, a part of output).
"""

from __future__ import annotations

import contextlib
import json
import math
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The per-row / per-run token split keys, in display order.
TOKEN_KINDS = ("input", "cached_input", "output", "reasoning")


def pricing_hint(model: str) -> str:
    """How to give ``model`` a price: the eval config's override table, spelled as TOML."""
    return (
        f"add [pricing.{json.dumps(model)}] with input and output (USD per million tokens) "
        "to the eval config"
    )


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """A price override in USD per million tokens (``cached_input`` defaults to ``input``)."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, split: Mapping[str, int]) -> float:
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return (
            split.get("input", 0) * self.input
            + split.get("cached_input", 0) * cached_rate
            + split.get("output", 0) * self.output
        ) / 1e6


def token_split(usage: Mapping[str, Any] | None) -> dict[str, int]:
    """``usage`` (OpenAI shape) as input / cached_input / output / reasoning token counts."""
    usage = usage or {}
    prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
    output = _int(usage.get("completion_tokens", usage.get("output_tokens")))
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
    cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    out_details = usage.get("completion_tokens_details") or usage.get("output_tokens_details") or {}
    reasoning = _int(out_details.get("reasoning_tokens")) if isinstance(out_details, Mapping) else 0
    cached = min(cached, prompt)
    return {
        "input": prompt - cached,
        "cached_input": cached,
        "output": output,
        "reasoning": reasoning,
    }


def add_splits(splits: Iterable[Mapping[str, int] | None]) -> dict[str, int]:
    total: dict[str, int] = dict.fromkeys(TOKEN_KINDS, 0)
    for split in splits:
        if split:  # an empty or missing split adds nothing
            for kind in TOKEN_KINDS:
                total[kind] += _int(split.get(kind))
    return total


@dataclass(frozen=True, slots=True)
class Priced:
    """A cost in USD, or ``usd=None`` with the ``reason`` it is unknown."""

    usd: float | None
    reason: str | None = None


@dataclass(slots=True)
class Pricer:
    """Prices calls of models: config overrides first, then ``genai-prices``; lookups cached."""

    overrides: Mapping[str, ModelPrice] = field(default_factory=dict)
    _misses: dict[tuple[str, str | None], str] = field(default_factory=dict)

    def price(
        self,
        model: str,
        split: Mapping[str, int],
        *,
        provider: str | None = None,
        base_url: str | None = None,
    ) -> Priced:
        """The cost of ``split`` tokens of ``model``.

        ``provider`` (a shorthand's provider) or else ``base_url`` (a custom endpoint) tells the
        library whose price applies; a local server it does not know has no price.
        """
        override = _override(self.overrides, model, provider)
        if override is not None:
            return Priced(override.cost(split))
        if not (split.get("input", 0) or split.get("cached_input", 0) or split.get("output", 0)):
            return Priced(0.0)  # no tokens spent: nothing to price
        key = (model, provider or base_url)
        missed = self._misses.get(key)
        if missed is not None:
            return Priced(None, missed)
        usd, reason = _library_price(model, split, provider, base_url)
        if usd is None:
            self._misses[key] = reason or "no price known"
            return Priced(None, self._misses[key])
        return Priced(usd)


def parse_overrides(raw: Mapping[str, Any] | None) -> dict[str, ModelPrice]:
    """``{model: {"input": .., "output": .., "cached_input"?: ..}}`` (USD per 1M tokens)."""
    from osmosis_ai.errors import ConfigurationError

    prices: dict[str, ModelPrice] = {}
    for model, entry in (raw or {}).items():
        if isinstance(entry, ModelPrice):
            prices[model] = entry
            continue
        values = dict(entry) if isinstance(entry, Mapping) else {}
        try:
            price = ModelPrice(
                input=_rate(values.pop("input")),
                output=_rate(values.pop("output")),
                cached_input=_rate(values.pop("cached_input"))
                if "cached_input" in values
                else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"[pricing.{model!r}] needs 'input' and 'output' (and optionally "
                "'cached_input'): non-negative USD per million tokens, e.g. "
                f'[pricing."{model}"] input = 0.4, output = 1.6'
            ) from exc
        if values:
            raise ConfigurationError(
                f"[pricing.{model!r}] has unknown key(s) {sorted(values)}; allowed: input, "
                "output, cached_input"
            )
        prices[model] = price
    return prices


def _override(
    overrides: Mapping[str, ModelPrice], model: str, provider: str | None
) -> ModelPrice | None:
    if not overrides:
        return None
    if provider and f"{provider}/{model}" in overrides:
        return overrides[f"{provider}/{model}"]
    return overrides.get(model)


#: Our provider names where genai-prices spells them differently.
_LIBRARY_PROVIDER = {"gemini": "google", "xai": "x-ai", "together_ai": "together"}


def _library_price(
    model: str, split: Mapping[str, int], provider: str | None, base_url: str | None
) -> tuple[float | None, str | None]:
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        return None, "no [pricing] entry and genai-prices is not installed"
    usage = Usage(
        input_tokens=split.get("input", 0) + split.get("cached_input", 0),
        cache_read_tokens=split.get("cached_input", 0),
        output_tokens=split.get("output", 0),
    )
    unknown = f"no price known for model {model!r}; {pricing_hint(model)}"
    if provider is None and base_url and _is_loopback_url(base_url):
        # The library knows hosted providers by their public API URL, so it has no price for a
        # server on this machine; asking would load its whole price table first (a 1.6 MB
        # module: ~80 MB of memory for a moment when Python compiles it from source).
        return None, unknown
    try:
        if provider:
            provider_id = _LIBRARY_PROVIDER.get(provider, provider)
            result = calc_price(usage, model, provider_id=provider_id)
        elif base_url:  # a gateway the library knows by URL; a local server: no price
            result = calc_price(usage, model, provider_api_url=base_url)
        else:
            result = calc_price(usage, model)
    except LookupError:
        return None, unknown
    total = float(result.total_price)
    return (total, None) if math.isfinite(total) else (None, "price not finite")


def _is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host is this machine (``localhost``, ``*.localhost`` or a loopback IP)."""
    from urllib.parse import urlsplit

    from osmosis_ai._util.serving import is_loopback_host

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return host.endswith(".localhost") or is_loopback_host(host)


def _rate(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(value)
    return float(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def row_cost(
    policy: Priced, split: Mapping[str, int], judge: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A row's ``cost`` object: policy, judge and total USD (``None`` = unknown) and tokens."""
    judge_usd = judge_cost(judge)
    total = None if policy.usd is None or judge_usd is None else policy.usd + judge_usd
    cost: dict[str, Any] = {
        "policy_usd": policy.usd,
        "judge_usd": judge_usd,
        "total_usd": total,
        "tokens": dict(split),
    }
    reasons = [r for r in (policy.reason, _judge_reason(judge)) if r]
    if reasons:
        cost["unknown_reason"] = "; ".join(reasons)
    return cost


def judge_cost(judge: Mapping[str, Any] | None) -> float | None:
    """A row's judge spend (0 without judge calls; ``None`` when some call had no price)."""
    if not judge:
        return 0.0
    if judge.get("unpriced_calls"):
        return None
    value = judge.get("cost_usd")
    return float(value) if isinstance(value, int | float) else 0.0


def _judge_reason(judge: Mapping[str, Any] | None) -> str | None:
    """Why a row's judge spend is unknown, the same words for every row of that judge (the
    row's count is ``judge.unpriced_calls``), so that a run's reason stays true for the run."""
    if not (judge and judge.get("unpriced_calls")):
        return None
    models = judge.get("models")
    named = ", ".join(str(m) for m in models) if isinstance(models, list) and models else None
    fix = "give the Judge prices=(input, output) in USD per million tokens"
    if named is None:
        return f"judge calls of a model with no known price; {fix}"
    return f"judge calls with no known price (judge model {named}); {fix}"


def run_cost(rows: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Totals of the rows' ``cost`` objects (a kind is ``None`` when any row's is unknown)."""
    totals = CostTotals()
    for row in rows:
        totals.add(row)
    return totals.result()


_COST_KINDS = ("policy_usd", "judge_usd", "total_usd")


class CostTotals:
    """:func:`run_cost` one row at a time (a run's finalisation streams its rows). Holds, per
    priced row, its known amounts (8 bytes per kind): ``math.fsum`` of them is exact, which a
    running float sum is not."""

    __slots__ = ("_known", "_reason", "_rows", "_tokens", "_unpriced")

    def __init__(self) -> None:
        self._rows = 0
        self._known: dict[str, array[float]] = {kind: array("d") for kind in _COST_KINDS}
        self._tokens: dict[str, int] = add_splits(())
        self._unpriced = 0
        self._reason: str | None = None

    def add(self, cost: Mapping[str, Any] | None) -> None:
        if not cost:
            return
        self._rows += 1
        for kind in _COST_KINDS:
            value = cost.get(kind)
            if isinstance(value, int | float):
                self._known[kind].append(float(value))
        split = cost.get("tokens")
        if split:
            for kind in TOKEN_KINDS:
                self._tokens[kind] += _int(split.get(kind))
        if cost.get("unknown_reason"):
            self._unpriced += 1
            reason = str(cost["unknown_reason"])
            self._reason = reason if self._reason is None else min(self._reason, reason)

    def result(self) -> dict[str, Any] | None:
        if not self._rows:
            return None
        totals: dict[str, Any] = {}
        for kind in _COST_KINDS:
            known = self._known[kind]
            totals[kind] = math.fsum(known) if len(known) == self._rows else None
            totals[f"{kind[:-4]}_known_usd"] = math.fsum(known)
        totals["tokens"] = dict(self._tokens)
        if self._unpriced:
            totals["unpriced_rows"] = self._unpriced
            totals["unknown_reason"] = self._reason
        return totals


@dataclass(slots=True)
class RowPricer:
    """Prices a row's policy calls (one upstream) and reads its judge spend: the ``cost`` object."""

    pricer: Pricer
    model: str
    base_url: str | None
    #: Set when the upstream can have no price (the offline mock policy).
    fixed_reason: str | None = None

    def __call__(
        self, usages: Iterable[Mapping[str, Any] | None], judge: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        split = add_splits(token_split(usage) for usage in usages)
        if self.fixed_reason is not None and any(split.values()):
            policy = Priced(None, self.fixed_reason)
        else:
            policy = self.pricer.price(self.model, split, base_url=self.base_url)
        return row_cost(policy, split, judge)

    def warm(self) -> None:
        """Look the upstream model's price up once, ahead of the first row: the first look-up
        loads the pricing library (~0.3 s of CPU, its price table is a 1.6 MB module), and the
        first finished row would otherwise pay that on the controller's event loop while every
        other row waits (a server on this machine is answered without the library). Safe to run
        on a helper thread while nothing else prices; the answer (a price, or the cached miss)
        is the one the first row gets anyway. Best effort: an error here is raised again, with
        its row, by the real look-up."""
        if self.fixed_reason is not None:
            return
        with contextlib.suppress(Exception):
            self.pricer.price(self.model, {"input": 1, "output": 1}, base_url=self.base_url)
