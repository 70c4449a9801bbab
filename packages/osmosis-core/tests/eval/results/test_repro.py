"""The reproducibility record: observed values, merging over sessions, differences."""

from __future__ import annotations

from osmosis_ai.eval._impl.results.reproducibility import (
    harbor_task_of,
    harbor_tasks,
    merged,
    observed,
    reproducibility_differences,
    rollout_record,
    run_versions,
    sampling_of,
)


def test_sampling_of_keeps_only_sampling_fields() -> None:
    body = {"model": "m", "messages": [], "temperature": 0.2, "seed": 7, "stream": True}
    assert sampling_of(body) == {"temperature": 0.2, "seed": 7}
    assert sampling_of({"model": "m", "messages": []}) is None


def test_observed_collects_unique_fingerprints_sampling_and_seeds() -> None:
    calls = [
        {"system_fingerprint": "fp_b", "sampling": {"temperature": 1.0, "seed": 3}},
        {"system_fingerprint": "fp_a", "sampling": {"seed": 3, "temperature": 1.0}},
        {"sampling": {"temperature": 0.0}},
        {},
    ]
    assert observed(calls) == {
        "system_fingerprints": ["fp_a", "fp_b"],
        "sampling": [{"seed": 3, "temperature": 1.0}, {"temperature": 0.0}],
        "seeds": [3],
    }


def test_merged_unions_the_observations_of_every_session() -> None:
    first = {"model": "m", "system_fingerprints": ["fp_a"], "sampling": [], "seeds": [1]}
    later = {"system_fingerprints": ["fp_b", "fp_a"], "seeds": [2]}
    record = merged(first, later)
    assert record["model"] == "m"
    assert record["system_fingerprints"] == ["fp_a", "fp_b"]
    assert record["seeds"] == [1, 2]
    assert record["sampling"] == []


def test_differences_name_each_field_and_skip_unrecorded_ones() -> None:
    a = {
        "versions": {"python": "3.12.1", "strands-agents": "1.62.0"},
        "model": "m",
        "seed": None,
        "system_fingerprints": ["fp_a"],
        "dataset_sha256": "ab",
    }
    b = {
        "versions": {"python": "3.12.1", "strands-agents": "1.61.0", "openai": "3.57.0"},
        "model": "m",
        "seed": 7,
        "system_fingerprints": ["fp_b"],
        # no dataset_sha256: written by an older version, not compared
    }
    assert reproducibility_differences(a, b) == [
        "version of openai: (absent) vs 3.57.0",
        "version of strands-agents: 1.62.0 vs 1.61.0",
        "seed: null vs 7",
        'system_fingerprints: ["fp_a"] vs ["fp_b"]',
    ]
    assert reproducibility_differences(a, dict(a)) == []


def test_digests_are_cut_to_twelve_hex_digits_like_git_commits() -> None:
    one, two = "6f61f813510e" + "a" * 52, "8a4c8f4cc7f1" + "b" * 52
    a = {"dataset_sha256": one, "harbor_tasks": [_task("t", "x", image_digest=f"sha256:{one}")]}
    b = {"dataset_sha256": two, "harbor_tasks": [_task("t", "x", image_digest=f"sha256:{two}")]}
    assert reproducibility_differences(a, b) == [
        'dataset_sha256: "6f61f813510e…" vs "8a4c8f4cc7f1…"',
        'harbor task \'t\' image_digest: "sha256:6f61f813510e…" vs "sha256:8a4c8f4cc7f1…"',
    ]
    # Anything else is shown whole, even when it is long hex of another length.
    assert reproducibility_differences({"model": "ab" * 20}, {"model": "cd" * 20}) == [
        f'model: "{"ab" * 20}" vs "{"cd" * 20}"'
    ]


def test_run_versions_name_python_and_osmosis_core() -> None:
    versions = run_versions()
    assert versions["python"].count(".") == 2
    assert "osmosis-core" in versions


def _task(name: str, task_sha256: str, **more: object) -> dict[str, object]:
    return {
        "name": name,
        "task_sha256": task_sha256,
        "dockerfile_sha256": "d1",
        "base_image": "python:3.12-slim",
        "docker_image": None,
        "image_digest": None,
        "environment": "local",
        **more,
    }


def test_harbor_task_of_reads_the_sample_key_and_ignores_anything_else() -> None:
    sent = {**_task("hello", "t1"), "unrelated": 1}
    assert harbor_task_of({"harbor_task": sent, "trainable": False}) == _task("hello", "t1")
    assert harbor_task_of({"harbor_task": "hello"}) is None  # not a record
    assert harbor_task_of({"harbor_task": {"task_sha256": "t1"}}) is None  # no name
    assert harbor_task_of({}) is None
    assert harbor_task_of(None) is None


def test_harbor_tasks_are_unique_and_sorted_and_absent_without_harbor() -> None:
    records = [
        {"harbor_task": _task("b", "t2")},
        {"harbor_task": _task("a", "t1")},
        {"harbor_task": _task("b", "t2")},
        {"status": "failed"},
    ]
    assert harbor_tasks(records) == [_task("a", "t1"), _task("b", "t2")]
    run = {"model": "m", "harbor_tasks": [_task("a", "t1"), _task("b", "t2")]}
    one = rollout_record(run, [], {"harbor_task": _task("b", "t2")})
    assert one["harbor_tasks"] == [_task("b", "t2")]
    assert "harbor_tasks" not in rollout_record(run, [], {"status": "success"})


def test_differences_name_the_harbor_task_and_field() -> None:
    a = {"harbor_tasks": [_task("hello", "t1"), _task("other", "o1")]}
    b = {"harbor_tasks": [_task("hello", "t2", image_digest="sha256:ff"), _task("new", "n1")]}
    assert reproducibility_differences(a, b) == [
        'harbor task \'hello\' task_sha256: "t1" vs "t2"',
        "harbor task 'hello' image_digest: null vs \"sha256:ff\"",
    ]
    # A run without Harbor rollouts has no harbor_tasks: nothing to compare.
    assert reproducibility_differences(a, {"model": "m"}) == []
