"""The stand-in platform's benchmark endpoints (``docs/platform-api.md``, "Benchmarks"): the
catalog with its leaderboard, and benchmark run submission and listing. Reading, stopping,
logs and downloads of benchmark runs are the generic run routes (``benchmark-runs`` is a run
collection in :data:`stand_in_state.RUN_KINDS`)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from stand_in_files import error, page
from stand_in_state import PlatformState, now

TASK_SETS = ("parity",)
MODEL_TYPES = ("provider", "endpoint", "hosted")


def add_benchmark_routes(app: FastAPI, state: PlatformState) -> None:
    def find(key: str) -> dict[str, Any] | None:
        return next((b for b in state.benchmarks if key in (b["key"], b["id"], b["name"])), None)

    @app.get("/api/cli/benchmarks")
    async def list_benchmarks(limit: int = 50, offset: int = 0) -> Any:
        if not 1 <= limit <= 200 or offset < 0:
            return error(400, "invalid_query", "limit must be 1..200 and offset >= 0", "limit")
        return page([{k: v for k, v in b.items() if k != "leaderboard"} for b in state.benchmarks],
                    limit, offset)  # fmt: skip

    @app.get("/api/cli/benchmarks/{key}")
    async def get_benchmark(key: str) -> Any:
        found = find(key)
        if found is None:
            return error(404, "benchmark_not_found", f"no benchmark {key!r}")
        return found

    @app.get("/api/cli/benchmark-runs")
    async def list_runs(limit: int = 50, offset: int = 0, benchmark: str | None = None) -> Any:
        if not 1 <= limit <= 200 or offset < 0:
            return error(400, "invalid_query", "limit must be 1..200 and offset >= 0", "limit")
        runs = [r for r in reversed(state.runs["benchmark"])
                if benchmark is None or r.get("benchmark_id") == benchmark]  # fmt: skip
        return page(runs, limit, offset)

    @app.post("/api/cli/benchmark-runs")
    async def submit(request: Request) -> Any:
        body = await request.json()
        experiment = body.get("experiment_config")
        if not isinstance(experiment, dict) or not isinstance(experiment.get("benchmark"), str):
            return error(422, "invalid_body", "experiment_config.benchmark is required",
                         "experiment_config.benchmark")  # fmt: skip
        bench = find(experiment["benchmark"])
        if bench is None:
            return error(404, "benchmark_not_found", f"no benchmark {experiment['benchmark']!r}")
        agents = body.get("agents")
        if not isinstance(agents, list) or not 1 <= len(agents) <= 8:
            return error(422, "invalid_body", "agents must list 1 to 8 agents", "agents")
        for index, agent in enumerate(agents):
            model = agent.get("model") if isinstance(agent, dict) else None
            if not isinstance(model, dict) or model.get("type") not in MODEL_TYPES:
                return error(422, "invalid_body", "each agent needs a model with a type",
                             f"agents[{index}].model")  # fmt: skip
            if set(agent) & {"rollout", "entrypoint", "name"}:
                return error(422, "invalid_body", "unknown agent keys", f"agents[{index}]")
        tasks = body.get("tasks_config") or {}
        if tasks.get("task_set") is not None and tasks["task_set"] not in TASK_SETS:
            return error(422, "invalid_task_set", f"unknown task set {tasks['task_set']!r}",
                         "tasks_config.task_set")  # fmt: skip
        secrets = body.get("secrets") or {}
        provided = secrets.get("provided") or {}
        missing = [n for n in secrets.get("required", []) if not provided.get(n)]
        if missing:
            return error(422, "missing_secrets", f"missing secret values: {', '.join(missing)}",
                         "secrets")  # fmt: skip
        number = state.next_id()
        run = {
            "id": f"brun_{number:04d}",
            "name": f"{bench['key']}-{number}",
            "kind": "benchmark",
            "status": "queued",
            "benchmark_id": bench["id"],
            "benchmark_name": bench["name"],
            "agent_count": len(agents),
            "task_count": bench["task_count"],
            "best_pass_at_1": None,
            "created_at": now(),
            "updated_at": now(),
            "url": f"{request.base_url}benchmark-runs/brun_{number:04d}",
            "secret_names": sorted(provided),  # names only: values are never stored
        }
        state.submitted_benchmarks.append(body)
        with state.changed:
            state.runs["benchmark"].append(run)
            state.logs[run["id"]] = []
        return JSONResponse(run, status_code=201)
