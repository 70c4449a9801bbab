#!/usr/bin/env bash
# The fresh-machine walk-through (issue 17): only the commands README.md and
# docs/getting-started.md document, in a clean venv outside the repository, installing from a
# local wheelhouse (the route to take until the 0.4 distributions are on PyPI):
#   install osmosis-ai[all] -> osmosis --version -> osmosis init -> for each template: apply,
#   install the rollout, validate, evaluate offline (--model mock) -> one --isolated run ->
#   a --mock-script run; the trajectories name osmosis-ai's version.
# Usage: scripts/walkthrough.sh WHEELHOUSE   (build it with `nox -s wheelhouse`; CI: `nox -s walkthrough`)
# Needs uv and python3 (3.12+) on PATH; reaches PyPI only (for third-party dependencies).
set -euo pipefail

wheelhouse=$(cd "${1:?usage: scripts/walkthrough.sh WHEELHOUSE}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/osmosis-walkthrough.XXXXXX")
judge_pid=""
cleanup() {
  [ -n "$judge_pid" ] && kill "$judge_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
step() { printf '\n==> %s\n' "$*"; }

# The documented local route: pip and uv (and `--isolated`, which runs uv) find the wheels here.
export PIP_FIND_LINKS="$wheelhouse" UV_FIND_LINKS="$wheelhouse"
export OSMOSIS_HOME="$work/osmosis-home"
unset VIRTUAL_ENV UV_PROJECT_ENVIRONMENT UV_PYTHON UV_SYSTEM_PYTHON OSMOSIS_TEMPLATES_DIR
cd "$work"

step "install from the wheelhouse into a clean venv"
export UV_PYTHON_DOWNLOADS=never   # the machine's Python: no download from outside PyPI
# The base interpreter of the python3 on PATH (outside any venv it may belong to, e.g. nox's).
base_python=$(python3 -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
uv venv -q --python "$base_python" .venv
# What `source .venv/bin/activate` does, spelled out (it must win over any venv nox put on PATH).
export VIRTUAL_ENV="$work/.venv" PATH="$work/.venv/bin:$PATH"
hash -r
[ "$(command -v python)" = "$work/.venv/bin/python" ] || { echo "python is $(command -v python)" >&2; exit 1; }
uv pip install -q "osmosis-ai[all]"
[ "$(command -v osmosis)" = "$work/.venv/bin/osmosis" ] || { echo "osmosis is $(command -v osmosis)" >&2; exit 1; }
osmosis --version
sdk=$(python -c 'from importlib.metadata import version; print(version("osmosis-ai"))')
osmosis --version | grep -q "^osmosis-ai $sdk (osmosis-core " || { echo "osmosis --version does not lead with osmosis-ai $sdk" >&2; exit 1; }

step "create a workspace"
osmosis init ws
cd ws

# Every template; one row each keeps the walk-through short (the --isolated run does two).
templates=(multiply-local-plain multiply-local-strands multiply-local-openai multiply-local-pydantic-ai multiply-local-adk rubric-judge-local multiply-harbor-strands)
export OSMOSIS_HARBOR_ENV=local   # Harbor's Docker-free sandbox (multiply-harbor-strands/README.md)

step "the scripted judge for rubric-judge-local (its README's offline route)"
python -m osmosis_ai.testing.policy_server --policy judge --port 0 >"$work/judge.url" &
judge_pid=$!
for _ in $(seq 100); do [ -s "$work/judge.url" ] && break; sleep 0.1; done
OSMOSIS_JUDGE_BASE_URL=$(head -n1 "$work/judge.url")
export OSMOSIS_JUDGE_BASE_URL

check_run() {  # check_run RESULT.json TEMPLATE: every row succeeded; the multiply ones earn 1.0
  python - "$1" "$2" "$sdk" <<'EOF'
import json, pathlib, sys
envelope, template, sdk = json.loads(pathlib.Path(sys.argv[1]).read_text()), sys.argv[2], sys.argv[3]
resource = envelope["resource"]
assert envelope["status"] == "success", (template, resource)
assert resource["failed"] == 0, (template, resource)
if template.startswith("multiply"):
    assert resource["metrics"]["reward_stats"]["mean"] == 1.0, (template, resource["metrics"])
run = pathlib.Path(resource["output_path"])
for line in (run / "index.jsonl").read_text().splitlines():
    trajectory = json.loads((run / json.loads(line)["trajectory_filename"]).read_text())
    assert trajectory["agent"]["version"] == sdk, (template, trajectory["agent"])
print(f"{template}: {resource['succeeded']} succeeded, mean reward "
      f"{resource['metrics']['reward_stats']['mean']}, producer {trajectory['agent']}")
EOF
}

for template in "${templates[@]}"; do
  step "$template: apply, install, validate, evaluate offline"
  osmosis template apply "$template"
  uv pip install -q -e "rollouts/$template"
  osmosis rollout validate "configs/eval/$template.toml"
  osmosis --json eval run "configs/eval/$template.toml" --model mock --limit 1 \
    --name "walk-$template" >"$work/$template.json"
  check_run "$work/$template.json" "$template"
done

step "--isolated: the rollout's own environment, resolved by uv against the wheelhouse"
osmosis --json eval run configs/eval/multiply-local-plain.toml --model mock --limit 2 --isolated \
  --name walk-isolated >"$work/isolated.json"
check_run "$work/isolated.json" multiply-local-plain
rollouts/multiply-local-plain/.venv/bin/python -c \
  'from importlib.metadata import version as v; print("isolated env:", v("osmosis-ai"), v("osmosis-core"))'

step "--mock-script: the offline policy scripted for one row"
user_prompt=$(python -c 'import json; print(json.loads(open("data/multiply.jsonl").readline())["user_prompt"])')
answer=$(python -c 'import json; print(json.loads(open("data/multiply.jsonl").readline())["ground_truth"])')
python - "$user_prompt" "$answer" >replies.jsonl <<'EOF'
import json, sys
print(json.dumps({"prompt": sys.argv[1], "replies": [f"#### {sys.argv[2]}"]}))
EOF
osmosis --json eval run configs/eval/multiply-local-plain.toml --mock-script replies.jsonl --rows 0 \
  --name walk-script >"$work/script.json"
check_run "$work/script.json" multiply-local-plain

step "walk-through passed"
