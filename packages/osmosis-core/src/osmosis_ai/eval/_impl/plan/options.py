"""The options of one evaluation (:class:`EvalOptions`), and what a run stores of them.

:class:`EvalOptions` is the one list of a run's settings: ``osmosis eval run`` builds it from
its flags, :func:`~osmosis_ai.eval.run_eval` takes it (or the same names as keyword arguments,
typed by :class:`EvalOptionsDict`), and the :class:`~.plan.EvalPlan` holds it, so a consumer reads
``plan.options.<name>``. A new option is written here (field + ``EvalOptionsDict`` key: a test
keeps them equal), as a CLI flag, and where it is used.

The run's manifest keeps the request's explicit choices (:func:`request_record`) so that a
resume given only the run name reuses them (:func:`stored_request`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from osmosis_ai._util.redaction import mask_url
from osmosis_ai.eval._impl.run_dir.layout import RunLayoutError, validate_run_name
from osmosis_ai.eval._impl.run_dir.manifest import ManifestError, read_manifest

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.proxy.calls import RetryPolicy
    from osmosis_ai.eval._impl.proxy.upstream import Upstream

__all__ = [
    "EvalOptions",
    "EvalOptionsDict",
    "PathLike",
    "RunTuning",
    "request_record",
    "stored_request",
]

PathLike = str | os.PathLike[str]


@dataclass(slots=True, kw_only=True)
class EvalOptions:
    """The settings of one evaluation (``None``: take it from the eval config, else the default).

    The same names are :func:`~osmosis_ai.eval.run_eval`'s keyword arguments; see its docstring
    for what each does.
    """

    dataset: PathLike | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    #: Sampling parameters set on every model call (``temperature``, ``top_p``, ``max_tokens``,
    #: ``seed`` or any other request field); ``None``: the rollout's own values.
    sampling: Mapping[str, Any] | None = None
    n: int | None = None
    limit: int | None = None
    #: 0-based dataset rows: ``'0-9,20'`` or a list of indices.
    rows: str | Sequence[int] | None = None
    name: str | None = None
    #: Where runs go (default ``<workspace>/.osmosis/evals``).
    output_dir: PathLike | None = None
    max_in_flight: int | None = None
    pass_threshold: float | None = None
    fresh: bool = False
    retry_failed: bool = False
    #: With ``retry_failed``: accept changed rollout code (see :mod:`..run_dir.code_revisions`).
    allow_changed: bool = False
    #: Halt after this many failed work items in one session (``None``: never).
    max_failures: int | None = None
    isolated: bool = False
    workers: int | str = "auto"
    env: Mapping[str, str] | None = None
    agent_timeout_sec: float | None = None
    grader_timeout_sec: float | None = None
    #: Ask the upstream for token ids (vLLM ``return_token_ids``): the token-level check.
    token_ids: bool = False
    #: Already-running rollout servers to drive instead of starting one (``--servers``);
    #: items may hold comma-separated URLs. ``servers_file``: one URL per line.
    servers: Sequence[str] | None = None
    servers_file: PathLike | None = None
    #: Where the policy proxy listens (default 127.0.0.1) and the URL servers reach it at.
    proxy_host: str | None = None
    proxy_url: str | None = None
    #: ``--mock-script``: a reply script (``.jsonl``, or ``.py`` with ``respond(body)``) the mock
    #: policy answers from (:mod:`osmosis_ai.testing.script`); implies ``model="mock"``.
    mock_script: PathLike | None = None
    #: The run's cost budget in USD (``--max-cost``; :mod:`..cost.budget`); ``None``: the config's.
    max_cost: float | None = None
    #: Fail the run (status ``failed``, ``stop_code`` ``append_only``) when a rollout is not
    #: append-only (``--require-append-only``).
    require_append_only: bool = False
    #: Serve the local rollout server on this 127.0.0.1 port instead of a free one
    #: (``--rollout-port``; the child gets it as ``_OSMOSIS_ROLLOUT_PORT``, as 0.3.8 did).
    rollout_port: int | None = None
    #: The rollout server logs at ``info`` with its access log (``--verbose``), to the run's
    #: server log; default ``warning``.
    verbose: bool = False
    #: Fail the run (status ``failed``, ``stop_code`` ``tripwire``) when a reward-hacking
    #: tripwire fired and was not silenced (``--fail-on-tripwire``; docs/tripwires.md).
    fail_on_tripwire: bool = False
    #: ``--env SOURCE:NAME[?k=v]``: evaluate an environment from another ecosystem (its rows
    #: are the dataset unless ``dataset`` is given; docs/environments.md).
    environment: str | None = None


class EvalOptionsDict(TypedDict, total=False):
    """:class:`EvalOptions` as keyword arguments (``run_eval(config, **options)``); same keys."""

    dataset: PathLike | None
    model: str | None
    base_url: str | None
    api_key: str | None
    api_key_env: str | None
    sampling: Mapping[str, Any] | None
    n: int | None
    limit: int | None
    rows: str | Sequence[int] | None
    name: str | None
    output_dir: PathLike | None
    max_in_flight: int | None
    pass_threshold: float | None
    fresh: bool
    retry_failed: bool
    allow_changed: bool
    max_failures: int | None
    isolated: bool
    workers: int | str
    env: Mapping[str, str] | None
    agent_timeout_sec: float | None
    grader_timeout_sec: float | None
    token_ids: bool
    servers: Sequence[str] | None
    servers_file: PathLike | None
    proxy_host: str | None
    proxy_url: str | None
    mock_script: PathLike | None
    max_cost: float | None
    require_append_only: bool
    rollout_port: int | None
    verbose: bool
    fail_on_tripwire: bool
    environment: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunTuning:
    """Internal knobs that are not user options (tests and benchmarks set them)."""

    #: The workspace root (default: found from the target).
    workspace: Path | None = None
    server_start_timeout_sec: float | None = None
    retry_policy: RetryPolicy | None = None
    #: Overrides the per-item deadline (agent + grader timeout + 60 s, else one hour).
    item_deadline_sec: float | None = None


def stored_request(options: EvalOptions, output_root: Path) -> EvalOptions:
    """Fill what the user left out from the run's stored request, when resuming by name.

    ``--model`` brings its own ``--base-url``/``--api-key-env``; ``--rows``/``--limit`` are one
    choice. Anything passed explicitly wins (and is then checked against the manifest as usual).
    """
    if options.name is None or options.fresh:
        return options
    try:
        manifest = read_manifest(output_root / validate_run_name(options.name) / "manifest.json")
    except (RunLayoutError, ManifestError):
        return options  # reported where the run is opened
    stored = (manifest or {}).get("provenance", {}).get("request")
    if not isinstance(stored, dict):
        return options
    changes: dict[str, Any] = {}
    if options.model is None and stored.get("model"):
        changes.update(
            model=stored["model"],
            base_url=options.base_url or stored.get("base_url"),
            api_key_env=options.api_key_env or stored.get("api_key_env"),
        )
    if options.dataset is None and stored.get("dataset"):
        changes["dataset"] = Path(stored["dataset"])
    if options.rows is None and options.limit is None:
        changes.update(rows=stored.get("rows"), limit=stored.get("limit"))
    if options.n is None and stored.get("n") is not None:
        changes["n"] = stored["n"]
    if options.sampling is None and stored.get("sampling"):
        changes["sampling"] = stored["sampling"]
    if options.model is None and options.mock_script is None and stored.get("mock_script"):
        changes["mock_script"] = stored["mock_script"]
    return replace(options, **changes)


def request_record(options: EvalOptions, dataset_path: Path, upstream: Upstream) -> dict[str, Any]:
    rows = options.rows
    base_url = options.base_url
    # A base URL carrying credentials is never written to a file: such a run resumes with
    # --model/--base-url passed again.
    with_secret = base_url is not None and mask_url(base_url) != base_url
    return {
        "model": None if with_secret else options.model,
        "base_url": None if with_secret else base_url,
        "api_key_env": options.api_key_env,
        # the variable the upstream key came from (its name only): the report redacts its value
        "upstream_key_env": upstream.key_env,
        "dataset": str(dataset_path) if options.dataset is not None else None,
        "rows": rows
        if rows is None or isinstance(rows, str)
        else ",".join(str(int(i)) for i in rows),
        "limit": options.limit,
        "n": options.n,
        "sampling": dict(options.sampling) if options.sampling else None,
        "mock_script": upstream.mock_script,
        **({"environment": options.environment} if options.environment else {}),
    }
