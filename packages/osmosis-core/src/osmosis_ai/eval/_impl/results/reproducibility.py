"""The reproducibility record of a run and of each trajectory (issue 15, item 7).

What it takes to say two runs were made the same way: package versions (Python, the osmosis
distributions, the agent frameworks), the model, the sampling parameters the policy calls carried
(the eval's overrides and whatever the rollout sent), the seeds among them, the
``system_fingerprint`` values the upstream reported, the dataset's digest and row selection, and
the rollout's source digest, and for rollouts run by the Harbor backend the task and image
digests (``harbor_tasks``: one entry per task and distinct digests; absent when no rollout of the
run came from Harbor, never an empty stand-in).

* The run's ``manifest.json`` has it under ``reproducibility`` (written when the run is created,
  updated at the end of every session with what the policy calls showed, all sessions merged);
* each trajectory has the run's record plus that rollout's own fingerprints, sampling, seeds
  and Harbor task under ``extra.osmosis.reproducibility``;
* :func:`reproducibility_differences` lists what differs between two runs (``osmosis eval
  compare`` warns with it).
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.plan.plan import EvalPlan

#: Request fields that change what the policy samples (recorded per call by the proxy).
SAMPLING_KEYS = (
    "temperature", "top_p", "top_k", "min_p", "max_tokens", "max_completion_tokens", "seed",
    "presence_penalty", "frequency_penalty", "repetition_penalty", "stop", "n", "logit_bias",
    "reasoning_effort",
)  # fmt: skip

#: Agent frameworks whose versions a run records (those installed), after the osmosis
#: distributions (:func:`osmosis_ai.versions.installed_versions`, the umbrella included).
_FRAMEWORKS = (
    "strands-agents",
    "openai-agents",
    "harbor",
    "pydantic-ai-slim",
    "google-adk",
    "openai",
)

#: Observed fields: merged over sessions and rollouts (sorted unique values).
_OBSERVED = ("system_fingerprints", "sampling", "seeds")


def run_versions() -> dict[str, str]:
    """Python and the installed osmosis distributions and agent frameworks, by name."""
    return dict(_versions())


@cache
def _versions() -> tuple[tuple[str, str], ...]:
    """Read once per process: each lookup scans the installed distributions' metadata (a
    package installed while the process runs shows from the next process on)."""
    from importlib.metadata import PackageNotFoundError, version

    from osmosis_ai.versions import installed_versions

    found = {"python": platform.python_version(), **installed_versions()}
    for name in _FRAMEWORKS:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return tuple(found.items())


def sampling_of(request: Mapping[str, Any]) -> dict[str, Any] | None:
    """The sampling fields of one chat-completions request body, or ``None``."""
    found = {key: request[key] for key in SAMPLING_KEYS if key in request}
    return found or None


def observed(calls: Iterable[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Fingerprints, distinct sampling settings and seeds seen in recorded calls."""
    fingerprints: set[str] = set()
    sampling: dict[str, dict[str, Any]] = {}
    seeds: set[str] = set()
    for call in calls:
        fingerprint = call.get("system_fingerprint")
        if isinstance(fingerprint, str):
            fingerprints.add(fingerprint)
        params = call.get("sampling")
        if isinstance(params, dict):
            sampling.setdefault(_key(params), params)
            if params.get("seed") is not None:
                seeds.add(_key(params["seed"]))
    return {
        "system_fingerprints": sorted(fingerprints),
        "sampling": [sampling[k] for k in sorted(sampling)],
        "seeds": [json.loads(s) for s in sorted(seeds)],
    }


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def run_record(plan: EvalPlan) -> dict[str, Any]:
    """What is known when a session starts (nothing observed yet)."""
    inputs = plan.inputs
    dataset = inputs.get("dataset") or {}
    rollout = inputs.get("rollout") or {}
    overrides = dict(plan.upstream.sampling)
    return {
        "versions": run_versions(),
        "model": plan.upstream.model,
        "sampling_overrides": overrides,
        "seed": overrides.get("seed"),
        "dataset_sha256": dataset.get("sha256"),
        "selection_sha256": dataset.get("selection_sha256"),
        "rollout_source_digest": rollout.get("source_digest"),
        **{name: [] for name in _OBSERVED},
    }


def merged(record: Mapping[str, Any], *more: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with the observed lists of ``more`` merged in (sorted, unique)."""
    out = dict(record)
    for name in _OBSERVED:
        values: dict[str, Any] = {}
        for source in (record, *more):
            for value in source.get(name) or ():
                values.setdefault(_key(value), value)
        out[name] = [values[k] for k in sorted(values)]
    return out


#: The sample ``extra_fields`` key under which the Harbor backend reports its task record
#: (``osmosis_ai.rollout.backend.harbor._digests``; it travels with the sample on the wire).
HARBOR_SAMPLE_KEY = "harbor_task"
#: The fields of a Harbor task record that identify what ran (compared per task name).
_HARBOR_FIELDS = (
    "task_sha256", "dockerfile_sha256", "base_image", "docker_image", "image_digest",
    "environment",
)  # fmt: skip


def harbor_task_of(extra_fields: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The Harbor task record a rollout's sample carries, or ``None`` (not a Harbor rollout)."""
    record = (extra_fields or {}).get(HARBOR_SAMPLE_KEY)
    if isinstance(record, dict) and isinstance(record.get("name"), str):
        return {"name": record["name"], **{k: record.get(k) for k in _HARBOR_FIELDS}}
    return None


def harbor_tasks(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The distinct Harbor task records of journal records (sorted by name, then digests)."""
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        task = record.get(HARBOR_SAMPLE_KEY)
        if isinstance(task, dict):
            found.setdefault(_key(task), task)
    return sorted(found.values(), key=_key)


def with_harbor_tasks(record: Mapping[str, Any], tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """``record`` with ``harbor_tasks`` set to ``tasks``, or without it when there are none."""
    out = {k: v for k, v in record.items() if k != "harbor_tasks"}
    if tasks:
        out["harbor_tasks"] = tasks
    return out


def rollout_record(
    run: Mapping[str, Any], calls: Iterable[Mapping[str, Any]], journal: Mapping[str, Any]
) -> dict[str, Any]:
    """One trajectory's record: the run's, with that rollout's observations and Harbor task."""
    return with_harbor_tasks({**run, **observed(calls)}, harbor_tasks([journal]))


#: Compared by :func:`reproducibility_differences`, in this order.
_COMPARED = (
    "model", "sampling_overrides", "seed", "sampling", "seeds", "system_fingerprints",
    "dataset_sha256", "selection_sha256", "rollout_source_digest",
)  # fmt: skip


def reproducibility_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Human-readable differences between two runs' records (empty: made the same way).

    A field missing from either record (a run written by an older version) is not compared.
    """
    out: list[str] = []
    versions_a, versions_b = a.get("versions") or {}, b.get("versions") or {}
    for name in sorted(set(versions_a) | set(versions_b)):
        if versions_a.get(name) != versions_b.get(name) and versions_a and versions_b:
            out.append(
                f"version of {name}: {versions_a.get(name) or '(absent)'} vs "
                f"{versions_b.get(name) or '(absent)'}"
            )
    for name in _COMPARED:
        if name not in a or name not in b or _key(a[name]) == _key(b[name]):
            continue
        out.append(f"{name}: {_short(a[name])} vs {_short(b[name])}")
    return out + _harbor_differences(a.get("harbor_tasks"), b.get("harbor_tasks"))


def _harbor_differences(a: Any, b: Any) -> list[str]:
    """Per Harbor task both runs used: each identifying field whose values differ."""
    if not isinstance(a, list) or not isinstance(b, list):
        return []  # a run without Harbor rollouts (or from an older version)
    by_name_a, by_name_b = _by_task(a), _by_task(b)
    out: list[str] = []
    for name in sorted(set(by_name_a) & set(by_name_b)):
        for field in _HARBOR_FIELDS:
            values_a = sorted({_key(t.get(field)) for t in by_name_a[name]})
            values_b = sorted({_key(t.get(field)) for t in by_name_b[name]})
            if values_a != values_b:
                out.append(
                    f"harbor task {name!r} {field}: {_short(_values(values_a))} vs "
                    f"{_short(_values(values_b))}"
                )
    return out


def _by_task(tasks: list[Any]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        if isinstance(task, dict) and isinstance(task.get("name"), str):
            grouped.setdefault(task["name"], []).append(task)
    return grouped


def _values(keys: list[str]) -> Any:
    values = [json.loads(k) for k in keys]
    return values[0] if len(values) == 1 else values


def _short(value: Any) -> str:
    text = json.dumps(_abbreviated(value), sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"


def _abbreviated(value: Any) -> Any:
    """A SHA-256 digest (``sha256:``-prefixed or bare hex) cut to 12 hex digits, as git shows a
    commit: two different digests all but surely differ there, and 64 digits hide the line."""
    if isinstance(value, str):
        head, digest = ("sha256:", value[7:]) if value.startswith("sha256:") else ("", value)
        if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
            return f"{head}{digest[:12]}…"
        return value
    if isinstance(value, list):
        return [_abbreviated(item) for item in value]
    return value


__all__ = [
    "HARBOR_SAMPLE_KEY",
    "SAMPLING_KEYS",
    "harbor_task_of",
    "harbor_tasks",
    "merged",
    "observed",
    "reproducibility_differences",
    "rollout_record",
    "run_record",
    "run_versions",
    "sampling_of",
    "with_harbor_tasks",
]
