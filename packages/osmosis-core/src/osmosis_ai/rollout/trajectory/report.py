"""``TrajectoryReport``: per-call LLM metrics a controller may report for a rollout (0.3.0).

In the 0.3.0 callback protocol the controller's acknowledgement could carry
``{"trajectory": {"model_name", "samples": {<key>: {"model_name", "llm_call_metrics": [...],
"final_metrics"}}}}``; the trajectory writer merges those metrics into the agent steps. The
0.3.8 poll protocol no longer sends one, but the names stay importable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class SampleReport:
    model_name: str | None = None
    llm_call_metrics: list[dict[str, Any]] = field(default_factory=list)
    final_metrics: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "llm_call_metrics": self.llm_call_metrics,
            "final_metrics": self.final_metrics,
        }


@dataclass(slots=True)
class TrajectoryReport:
    model_name: str | None = None
    samples: dict[str, SampleReport] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrajectoryReport:
        samples: dict[str, SampleReport] = {}
        raw_samples = data.get("samples")
        if isinstance(raw_samples, Mapping):
            for key, raw in raw_samples.items():
                if not isinstance(raw, Mapping):
                    continue
                calls = raw.get("llm_call_metrics")
                samples[str(key)] = SampleReport(
                    model_name=raw.get("model_name")
                    if isinstance(raw.get("model_name"), str)
                    else None,
                    llm_call_metrics=[dict(c) for c in calls if isinstance(c, Mapping)]
                    if isinstance(calls, list)
                    else [],
                    final_metrics=dict(raw["final_metrics"])
                    if isinstance(raw.get("final_metrics"), Mapping)
                    else None,
                )
        model = data.get("model_name")
        return cls(model_name=model if isinstance(model, str) else None, samples=samples)


def report_from_response(response: Any) -> TrajectoryReport | None:
    """The report in a controller response's JSON ``trajectory`` key, if any (never raises)."""
    try:
        body = response.json()
    except Exception:
        return None
    if not isinstance(body, Mapping):
        return None
    raw = body.get("trajectory")
    return TrajectoryReport.from_dict(raw) if isinstance(raw, Mapping) else None
