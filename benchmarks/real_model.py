"""What the eval's policy proxy adds to a real model call, and `eval run` rows/s on a real server.

The model is SmolLM2-135M-Instruct on llama.cpp's OpenAI-compatible server
(``osmosis_ai.testing.LocalModelServer``, extra ``local-model``), on this machine. Two figures:

1. **Proxy overhead per policy call** at concurrency 8: the same chat-completions requests
   (fixed prompt, ``max_tokens`` 16, temperature 0) sent straight to the server and through the
   eval's :class:`~osmosis_ai.eval._impl.proxy.policy_proxy.PolicyProxy`, in interleaved blocks (direct, proxied,
   direct, ...). Reported: the client-seen latency of each path, and the proxy's own share of
   each proxied call (client-seen latency minus the upstream latency the proxy timed), as ms and
   as a share of the real call.
2. **`eval run` rows/s** of the ``multiply-local-plain`` template with ``--model local`` (one
   policy call per row when the model answers in prose), beside the same number of direct calls
   at the same concurrency, in one run.

    uv run python benchmarks/real_model.py                    # 96 calls per path, 16 eval rows
    uv run python benchmarks/real_model.py --calls 48 --rows 8

Prints figures; never asserts (the issue's target: proxy overhead <= 2% of the real call's
latency at concurrency 8).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

CONCURRENCY = 8
BODY: dict[str, Any] = {
    "model": "smollm2",
    "messages": [{"role": "user", "content": "Name one colour."}],
    "max_tokens": 16,
    "temperature": 0,
}


async def _calls(url: str, headers: dict[str, str], count: int) -> list[float]:
    """``count`` requests, ``CONCURRENCY`` at a time; each one's latency in ms."""
    latencies: list[float] = []
    queue = list(range(count))
    async with httpx.AsyncClient(timeout=120) as client:

        async def worker() -> None:
            while queue:
                queue.pop()
                started = time.perf_counter()
                response = await client.post(url, json=BODY, headers=headers)
                latencies.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return latencies


async def proxy_overhead(base_url: str, calls: int, blocks: int) -> None:
    from osmosis_ai.eval._impl.proxy.policy_proxy import PolicyProxy
    from osmosis_ai.eval._impl.proxy.upstream import Upstream

    direct: list[float] = []
    proxied: list[float] = []
    own: list[float] = []  # client-seen minus upstream latency, per proxied call
    upstream_ms: list[float] = []
    per_block = max(1, calls // blocks)
    async with PolicyProxy(Upstream(model="smollm2", base_url=base_url)) as proxy:
        await _calls(f"{base_url}/chat/completions", {}, CONCURRENCY)  # warm the model's cache
        for block in range(blocks):
            direct += await _calls(f"{base_url}/chat/completions", {}, per_block)
            rollout_id = f"bench-{block}"
            url, token = proxy.register(rollout_id)
            seen = await _calls(
                f"{url}/chat/completions", {"authorization": f"Bearer {token}"}, per_block
            )
            records = proxy.unregister(rollout_id)
            proxied += seen
            # Pair by order of completion is not possible; compare the means per block.
            block_upstream = [r.latency_ms for r in records]
            upstream_ms += block_upstream
            own.append(statistics.fmean(seen) - statistics.fmean(block_upstream))
    d_mean, p_mean = statistics.fmean(direct), statistics.fmean(proxied)
    overhead = statistics.fmean(own)
    print(
        f"proxy overhead at concurrency {CONCURRENCY} ({len(direct)} calls per path, {blocks} blocks)"
    )
    print(
        f"  direct:  mean {d_mean:8.1f} ms  p50 {statistics.median(direct):8.1f} ms  "
        f"p95 {_p95(direct):8.1f} ms"
    )
    print(
        f"  proxied: mean {p_mean:8.1f} ms  p50 {statistics.median(proxied):8.1f} ms  "
        f"p95 {_p95(proxied):8.1f} ms"
    )
    print(
        f"  proxy's own time per call (client-seen minus upstream, mean of blocks): "
        f"{overhead:.2f} ms = {100 * overhead / d_mean:.3f}% of the direct call"
    )
    print(
        f"  difference of the two paths' means: {p_mean - d_mean:+.1f} ms = "
        f"{100 * (p_mean - d_mean) / d_mean:+.2f}% (includes the model's own run-to-run noise)"
    )


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def eval_rows_per_second(rows: int) -> None:
    """``osmosis eval run`` of the plain template with ``--model local``, end to end."""
    osmosis = str(Path(sys.executable).with_name("osmosis"))
    with tempfile.TemporaryDirectory(prefix="osmosis-bench-real-") as tmp:
        ws = Path(tmp) / "ws"
        subprocess.run([osmosis, "init", str(ws)], check=True, capture_output=True)
        subprocess.run(
            [osmosis, "template", "apply", "multiply-local-plain"],
            cwd=ws,
            check=True,
            capture_output=True,
        )
        started = time.perf_counter()
        done = subprocess.run(
            [osmosis, "eval", "run", "configs/eval/multiply-local-plain.toml", "--json",
             "--model", "local", "--limit", str(rows), "--max-in-flight", str(CONCURRENCY),
             "--model-arg", "max_tokens=16", "--model-arg", "temperature=0", "--no-report"],
            cwd=ws, capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - started
        if done.returncode not in (0, 1):
            print(done.stderr[-2000:])
            raise SystemExit(done.returncode)
        calls = sum(len(path.read_text().splitlines()) for path in ws.rglob("llm_calls.jsonl"))
    print(
        f"eval run: {rows} rows ({calls} policy calls) in {wall:.1f} s end to end (model "
        f"start-up included) = {rows / wall:.2f} rows/s"
    )


async def direct_calls_per_second(base_url: str, count: int) -> None:
    started = time.perf_counter()
    await _calls(f"{base_url}/chat/completions", {}, count)
    wall = time.perf_counter() - started
    print(f"direct: {count} calls in {wall:.1f} s = {count / wall:.2f} calls/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=96, help="calls per path (default 96)")
    parser.add_argument("--blocks", type=int, default=4, help="interleaved blocks (default 4)")
    parser.add_argument("--rows", type=int, default=16, help="eval rows (default 16)")
    args = parser.parse_args()

    from osmosis_ai.testing import LocalModelServer

    with LocalModelServer(seed=1) as model:
        asyncio.run(proxy_overhead(model.base_url, args.calls, args.blocks))
        asyncio.run(direct_calls_per_second(model.base_url, args.rows))
    eval_rows_per_second(args.rows)


if __name__ == "__main__":
    main()
