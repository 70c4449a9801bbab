"""The options of ``osmosis eval run`` (typer reads them from :func:`~.eval_run.run`'s signature).

Declared here, one ``Annotated`` alias each, so the command itself reads as what it does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigArg = Annotated[Path, typer.Argument(help="Eval config, e.g. configs/eval/<rollout>.toml.")]
OptionalConfigArg = Annotated[
    Path | None,
    typer.Argument(
        help="Eval config, e.g. configs/eval/<rollout>.toml (optional with --env).",
        show_default=False,
    ),
]
Environment = Annotated[
    str | None,
    typer.Option(
        "--env",
        metavar="SPEC",
        help="Evaluate an environment from another ecosystem, SOURCE:NAME[?KEY=VALUE&...] "
        "(e.g. 'reasoning-gym:leg_counting?size=20'); its rows are the dataset. No eval "
        "config needed. See docs/environments.md.",
    ),
]
Dataset = Annotated[
    Path | None,
    typer.Option(
        "--dataset",
        "--dataset-file",
        help="Local JSONL, CSV or Parquet file (default: experiment.dataset).",
    ),
]
SecretsFile = Annotated[
    str | None,
    typer.Option(
        "--secrets-file",
        metavar="PATH",
        help="NAME=value lines ('-' reads stdin) set for this run: the rollout's [secrets] and "
        "keys; the values are masked in every file and message.",
    ),
]
RolloutPort = Annotated[
    int | None,
    typer.Option(
        "--rollout-port",
        min=1,
        max=65535,
        help="Serve the local rollout server on this 127.0.0.1 port (default: a free one).",
    ),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        help="The rollout server logs at info level with its access log (in the run's "
        "rollout_server.log, whose path is printed).",
    ),
]
Upload = Annotated[
    bool,
    typer.Option(
        "--upload",
        help="When the run finishes, upload its results to the platform (as 'eval upload').",
    ),
]
Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Model: 'openai/<model>' style shorthand, a served name with --base-url, "
        "'local' (a real model offline: SmolLM2-135M on llama.cpp, extra 'local-model'), or "
        "'mock' (offline scripted policy: a plumbing check, its rewards mean nothing).",
    ),
]
BaseUrl = Annotated[
    str | None,
    typer.Option("--base-url", help="Any OpenAI-compatible base URL (vLLM, SGLang, Ollama...)."),
]
MockScript = Annotated[
    str | None,
    typer.Option(
        "--mock-script",
        metavar="FILE",
        help="Script the offline mock policy (implies --model mock): a .jsonl of replies per "
        "row or prompt, or a .py with respond(body); see docs/guides/testing-offline.md.",
    ),
]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option("--api-key-env", help="Environment variable holding the upstream API key."),
]
Temperature = Annotated[
    float | None, typer.Option("--temperature", help="Sampling temperature for every call.")
]
TopP = Annotated[
    float | None, typer.Option("--top-p", help="Nucleus sampling top_p for every call.")
]
MaxTokens = Annotated[
    int | None, typer.Option("--max-tokens", min=1, help="max_tokens for every call.")
]
Seed = Annotated[int | None, typer.Option("--seed", help="Sampling seed for every call.")]
ModelArg = Annotated[
    list[str] | None,
    typer.Option(
        "--model-arg",
        metavar="KEY=VALUE",
        help="Any other request field for every call (VALUE parsed as JSON, else a string); "
        "repeatable. Sampling flags are recorded in the run's manifest.",
    ),
]
N = Annotated[int | None, typer.Option("--n", help="Samples per row (default: evaluation.n).")]
Limit = Annotated[int | None, typer.Option("--limit", help="Evaluate the first N rows.")]
Rows = Annotated[
    str | None, typer.Option("--rows", help="Rows to evaluate, 0-based: '0-9' or '3,7,10-20'.")
]
MaxInFlight = Annotated[
    int | None,
    typer.Option("--max-in-flight", help="Rollouts running at once (default: server capacity)."),
]
MaxCost = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        metavar="USD",
        help="Cost budget of the run (default: evaluation.max_cost_usd): no new row starts "
        "once the next would not fit; rows in flight finish; exit code 3. Needs a known price.",
    ),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask to confirm the cost estimate.")]
PassThreshold = Annotated[
    float | None,
    typer.Option("--pass-threshold", help="Reward counted as a pass (default 1.0)."),
]
Name = Annotated[
    str | None,
    typer.Option("--name", help="Run name; rerunning a name resumes it (default: generated)."),
]
Fresh = Annotated[bool, typer.Option("--fresh", help="Archive the existing run and start over.")]
RetryFailed = Annotated[
    bool, typer.Option("--retry-failed", help="Rerun the work items that failed or were skipped.")
]
AllowChanged = Annotated[
    bool,
    typer.Option(
        "--allow-changed",
        help="With --retry-failed: retry on changed rollout code (recorded in the manifest).",
    ),
]
MaxFailures = Annotated[
    int | None,
    typer.Option(
        "--max-failures",
        metavar="N",
        help="Stop dispatching once N work items failed (resumable). Independently, 5 "
        "failures in a row at the model endpoint always stop the run.",
    ),
]
OutputDir = Annotated[
    Path | None,
    typer.Option(
        "--runs-dir",
        "--output",
        help="Runs folder (default: <workspace>/.osmosis/evals); --output is its older name.",
    ),
]
#: ``eval run -o DIR``, the 0.3 spelling of ``--runs-dir``: still accepted (hidden), with a
#: warning, since ``-o`` everywhere else names the file a command writes.
OutputDirShort = Annotated[Path | None, typer.Option("-o", hidden=True)]
Isolated = Annotated[
    bool,
    typer.Option(
        "--isolated",
        help="Run the rollout server in the rollout's own environment (uv run --project).",
    ),
]
NoReport = Annotated[
    bool, typer.Option("--no-report", help="Do not write <run>/report.html at the end.")
]
Workers = Annotated[
    str,
    typer.Option(
        "--workers",
        help="Worker processes running rollouts: a number, or 'auto' (usable cores, max 8, one per 32 work items).",
    ),
]
TokenIds = Annotated[
    bool,
    typer.Option(
        "--token-ids",
        help="Ask the model server for token ids (vLLM's return_token_ids) and check them "
        "too. Only for engines that accept the field; hosted APIs may reject it.",
    ),
]
Servers = Annotated[
    list[str] | None,
    typer.Option(
        "--servers",
        metavar="URL[,URL...]",
        help="Drive these already-running rollout servers instead of starting one "
        "(inbound key from $OSMOSIS_ROLLOUT_API_KEY); repeatable.",
    ),
]
ServersFile = Annotated[
    Path | None,
    typer.Option(
        "--servers-file",
        help="File with one rollout server URL per line (what `osmosis rollout deploy` writes).",
    ),
]
ProxyHost = Annotated[
    str | None,
    typer.Option(
        "--proxy-host",
        help="Interface the policy proxy binds (default 127.0.0.1); needs --proxy-url.",
    ),
]
ProxyUrl = Annotated[
    str | None,
    typer.Option(
        "--proxy-url",
        help="URL the rollout servers reach the policy proxy at (its port is bound).",
    ),
]
RequireAppendOnly = Annotated[
    bool,
    typer.Option(
        "--require-append-only",
        help="Exit 1 when any rollout is not append-only (unsafe for token-in/token-out "
        "training; see docs/guides/training-safe-rollouts.md).",
    ),
]
FailOnTripwire = Annotated[
    bool,
    typer.Option(
        "--fail-on-tripwire",
        help="Exit 1 when a reward-hacking tripwire fired on a row and is not silenced in "
        "[evaluation.silence_tripwires] (for CI; see docs/tripwires.md).",
    ),
]
