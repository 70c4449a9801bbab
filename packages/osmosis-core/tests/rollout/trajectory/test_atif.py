"""ATIF conversion rules (reference §E.4)."""

from __future__ import annotations

import json
from typing import Any

from osmosis_ai.rollout import RolloutSample
from osmosis_ai.rollout.trajectory import (
    SCHEMA_VERSION,
    TrajectoryReport,
    convert_sample_to_trajectory,
    dumps_trajectory,
    report_from_response,
)

USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief"},
    {"role": "developer", "content": "dev note"},
    {
        "role": "user",
        "content": [{"type": "text", "text": "What is"}, {"type": "text", "text": "6*7?"}],
    },
    {
        "role": "assistant",
        "content": None,
        "model": "policy-a",
        "usage": {**USAGE, "prompt_tokens_details": {"cached_tokens": 4}, "cost": 0.5},
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "multiply", "arguments": '{"a": 6, "b": 7}'},
            },
            {"id": "c2", "type": "function", "function": {"name": "noop", "arguments": "not json"}},
        ],
        "prompt_token_ids": [1, 2, 3],
        "completion_token_ids": [4, 5],
        "logprobs": {
            "content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -0.25}]
        },
        "created_at": 0,
        "reasoning_content": "multiply them",
    },
    {"role": "tool", "tool_call_id": "c1", "content": "42"},
    {"role": "tool", "tool_call_id": "c2", "content": "ok"},
    {
        "role": "assistant",
        "content": "#### 42",
        "model": "policy-a",
        "usage": {"input_tokens": 20, "output_tokens": 3},
        "timestamp": "2026-01-01T00:00:00Z",
    },
    {"role": "narrator", "content": "odd role"},
]


def convert(sample: RolloutSample, **kwargs: Any) -> dict[str, Any]:
    document = convert_sample_to_trajectory(sample, rollout_id="r1", **kwargs)
    assert document is not None
    return document


def test_document_shape_and_role_mapping() -> None:
    sample = RolloutSample(messages=MESSAGES, label="42", reward=1.0, metrics={"turns": 2})
    doc = convert(sample, request_metadata={"row": 3}, request_extra_fields={"run_index": 0})
    assert doc["schema_version"] == SCHEMA_VERSION == "ATIF-v1.7"
    assert doc["session_id"] == "r1"
    assert doc["trajectory_id"] == "r1"
    assert doc["agent"]["name"] == "osmosis-rollout-sdk"
    assert doc["agent"]["model_name"] == "policy-a"
    steps = doc["steps"]
    assert [s["source"] for s in steps] == ["system", "system", "user", "agent", "agent", "user"]
    assert [s["step_id"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert steps[2]["message"] == "What is\n6*7?"
    assert steps[5]["extra"] == {"role": "narrator"}
    assert doc["final_metrics"]["total_steps"] == 6
    osmosis = doc["extra"]["osmosis"]
    assert osmosis == {
        "rollout_id": "r1",
        "label": "42",
        "reward": 1.0,
        "sample_metrics": {"turns": 2},
        "request_metadata": {"row": 3},
        "request_extra_fields": {"run_index": 0},
    }


def test_agent_step_tool_calls_observations_and_metrics() -> None:
    doc = convert(RolloutSample(messages=MESSAGES))
    agent = doc["steps"][3]
    assert agent["model_name"] == "policy-a"
    assert agent["message"] == ""
    assert agent["reasoning_content"] == "multiply them"
    assert agent["timestamp"] == "1970-01-01T00:00:00Z"
    assert agent["tool_calls"] == [
        {"tool_call_id": "c1", "function_name": "multiply", "arguments": {"a": 6, "b": 7}},
        {"tool_call_id": "c2", "function_name": "noop", "arguments": {"raw": "not json"}},
    ]
    assert agent["observation"] == {
        "results": [
            {"source_call_id": "c1", "content": "42"},
            {"source_call_id": "c2", "content": "ok"},
        ]
    }
    assert agent["metrics"] == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cached_tokens": 4,
        "cost_usd": 0.5,
        "prompt_token_ids": [1, 2, 3],
        "completion_token_ids": [4, 5],
        "logprobs": [-0.5, -0.25],
    }
    final = doc["steps"][4]
    assert final["metrics"] == {"prompt_tokens": 20, "completion_tokens": 3}  # Responses names
    assert final["timestamp"] == "2026-01-01T00:00:00Z"
    assert doc["final_metrics"] == {
        "total_prompt_tokens": 30,
        "total_completion_tokens": 8,
        "total_cached_tokens": 4,
        "total_cost_usd": 0.5,
        "total_steps": 6,
    }


def test_usage_from_extra_response_and_orphan_tool_result() -> None:
    messages = [
        {"role": "tool", "tool_call_id": "x", "content": "orphan"},
        {"role": "assistant", "content": "hi", "extra": {"response": {"usage": USAGE}}},
    ]
    doc = convert(RolloutSample(messages=messages))
    assert doc["steps"][0]["source"] == "user"
    assert doc["steps"][0]["message"] == "orphan"
    assert doc["steps"][1]["metrics"] == {"prompt_tokens": 10, "completion_tokens": 5}
    assert "model_name" not in doc["agent"]


def test_no_trajectory_messages_means_no_document() -> None:
    sample = RolloutSample(messages=MESSAGES, trajectory_messages=None)
    assert convert_sample_to_trajectory(sample, rollout_id="r1") is None


def test_trajectory_messages_differ_from_messages() -> None:
    sample = RolloutSample(
        messages=[{"role": "assistant", "content": [{"text": "native"}]}],
        trajectory_messages=[{"role": "assistant", "content": "chat form"}],
    )
    assert convert(sample)["steps"][0]["message"] == "chat form"


def test_non_json_safe_sample_fields_are_dropped_and_label_falls_back() -> None:
    sample = RolloutSample(
        messages=[], metrics={"bad": float("nan"), "ok": 1}, extra_fields={"o": object()}
    )
    doc = convert(sample, request_label="L")
    osmosis = doc["extra"]["osmosis"]
    assert osmosis["sample_metrics"] == {"ok": 1}
    assert "sample_extra_fields" not in osmosis
    assert osmosis["label"] == "L"
    json.dumps(doc, allow_nan=False)


def test_report_metrics_map_to_agent_steps_when_counts_match() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a1"},
        {"role": "assistant", "content": "a2"},
    ]
    report = TrajectoryReport.from_dict(
        {
            "model_name": "reported",
            "samples": {
                "s": {
                    "llm_call_metrics": [
                        {"prompt_tokens": 1, "completion_tokens": 2, "completion_token_ids": [7]},
                        {"prompt_tokens": 3, "completion_tokens": 4, "model_name": "m2"},
                    ]
                },
                "extra": {"llm_call_metrics": [{"prompt_tokens": 9}]},
            },
        }
    )
    doc = convert(RolloutSample(messages=messages), report=report)
    assert doc["steps"][1]["metrics"] == {
        "prompt_tokens": 1,
        "completion_tokens": 2,
        "completion_token_ids": [7],
    }
    assert doc["steps"][2]["model_name"] == "m2"
    assert doc["agent"]["model_name"] == "reported"
    assert doc["extra"]["osmosis"]["unmatched_sample_reports"][0]["llm_call_metrics"] == [
        {"prompt_tokens": 9}
    ]

    mismatched = TrajectoryReport.from_dict(
        {"samples": {"s": {"llm_call_metrics": [{"prompt_tokens": 1}]}}}
    )
    doc = convert(RolloutSample(messages=messages), report=mismatched)
    assert "metrics" not in doc["steps"][1]
    assert doc["extra"]["osmosis"]["unmatched_llm_call_metrics"] == [{"prompt_tokens": 1}]


def test_report_from_response() -> None:
    class Response:
        def __init__(self, body: Any) -> None:
            self.body = body

        def json(self) -> Any:
            if isinstance(self.body, Exception):
                raise self.body
            return self.body

    report = report_from_response(Response({"trajectory": {"model_name": "m", "samples": {}}}))
    assert report is not None
    assert report.model_name == "m"
    assert report_from_response(Response({"ok": True})) is None
    assert report_from_response(Response(ValueError("not json"))) is None


def test_dumps_is_valid_json_with_one_step_per_line() -> None:
    doc = convert(RolloutSample(messages=MESSAGES, reward=0.5))
    text = dumps_trajectory(doc)
    assert json.loads(text) == doc
    lines = text.splitlines()
    assert lines[0] == "{"
    assert lines[-1] == "}"
    step_lines = [line for line in lines if line.startswith('    {"step_id"')]
    assert len(step_lines) == len(doc["steps"])
    assert any('"completion_token_ids": [4, 5]' in line for line in step_lines)
