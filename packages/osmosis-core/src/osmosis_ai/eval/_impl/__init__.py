"""The private wing of :mod:`osmosis_ai.eval`: everything ``osmosis eval run`` needs that is not
public API. Nothing outside ``osmosis_ai.eval`` imports from here (one import-linter line fences
it from the CLI); the public names are re-exported by ``osmosis_ai.eval``.

Top (orchestration), read in this order: :mod:`.api` (``run_eval``) -> :mod:`.session` (one
session of a run: open the run directory, dispatch, finalize) -> :mod:`.dispatch` /
:mod:`.fleet_dispatch` (start the rollout server or drive a fleet, start the policy proxy) ->
:mod:`.scheduler` (work items through the rollout client) -> :mod:`.finalize` (metrics, index,
manifest, trajectories). Below them, one sub-package per seam:

* :mod:`.plan` - the request (:class:`~.plan.options.EvalOptions`) resolved into an ``EvalPlan``:
  source, dataset, row selection, mock script;
* :mod:`.proxy` - the policy proxy between the rollout and the upstream model (in process or
  as a child), the upstream and its providers;
* :mod:`.local_server` - the rollout server child process an eval starts;
* :mod:`.fleet` - already-running rollout servers (``--servers``);
* :mod:`.run_dir` - the run directory: layout and lock, manifest, journal, records, log,
  trajectories;
* :mod:`.results` - the run model (:class:`~.results.run.EvalRun`), metrics, training safety,
  reproducibility;
* :mod:`.cost` - pricing and the run's budget.
"""
