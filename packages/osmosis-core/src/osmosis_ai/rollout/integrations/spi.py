"""The integration interface: what core promises to distributions that extend it.

Framework integrations (``osmosis-strands``, ``osmosis-openai-agents``, the next one) and other
sibling distributions import core only through the documented public paths
(``osmosis_ai.rollout``, ``.context``, ``.types``, ``.backend``, ``osmosis_ai.errors``, ...) and
through this module. Everything here is kept compatible within a core minor version
(``osmosis-core>=0.1,<0.2``); any other core module is internal and may change without notice.

What an integration needs, in one place:

* packaging: :func:`lazy_exports` (lazy ``__getattr__``/``__dir__`` for a package ``__init__``
  built from an ``_EXPORTS`` table, so importing an integration does not import its framework;
  :func:`exports_from` builds that table from ``{module: "Name Name ..."}``; derive
  ``__all__ = sorted(_EXPORTS)`` and list the same names under ``if TYPE_CHECKING:``);
* the rollout contract: :class:`RolloutContext`, :func:`get_rollout_context`,
  :func:`record_tool_error` (a tool call raised: counted per row, never graded as an answer;
  returns the text to show the model), :class:`SampleSource` (register one per rollout;
  ``MySource.for_rollout()`` does it for the active rollout; :class:`ConversationSampleSource`
  keeps the main conversation of frameworks that send it whole on every call, ``record_later``
  for an answer built only if the sample needs it), :class:`RolloutSample`,
  :func:`share_in_config_copies` (objects that ``LocalBackend`` may share between config copies);
* the policy layer (:mod:`osmosis_ai.rollout.policy`): :func:`require_active_rollout`,
  :func:`policy_client`, :func:`aclose_policy_clients`, :func:`translate_policy_error`,
  :func:`translating_policy_errors`, :func:`usage_dict`, :func:`strict_chat_messages`,
  :class:`PolicyCall`, :class:`CallObserver`; for a framework model: :func:`bind_policy`
  (:class:`PolicyBinding`), :func:`policy_model_name`, :func:`restore_tool_arguments`,
  :func:`run_blocking`; :func:`complete_chat` and :class:`ChatAnswer` (one chat-completions
  call, streamed or not, for an adapter whose framework does not speak the ``openai`` client);
  :class:`WireTranscript` (for an integration that renders chat messages itself: the policy's raw
  tool-call arguments sent back unchanged, and the main conversation with per-call ``model`` and
  ``usage`` as the trajectory);
* for execution backends (``osmosis-harbor``): the one execution engine that every backend runs
  (:func:`run_workflow_phase`, :func:`run_grader_phase`, :func:`validate_reward`, :func:`failure`)
  where osmosis keeps files (:func:`rollout_dir`, :func:`osmosis_cache_dir`) and which files
  make up a rollout project (:func:`iter_project_files`) and their digest (:func:`files_digest`), and the ``uv`` executable
  (:func:`find_uv`, :class:`UvNotFoundError`);
* plumbing with one owner in core, for every sibling distribution (the CLI too):
  :func:`write_atomic` (atomic file writes), :class:`Redactor` and :func:`mask_url` (the one
  redaction rule: given secrets of 4 or more characters, URL credentials, ``Bearer``/``Basic``
  values; :func:`register_secret` adds one this process learned, for it and its children),
  :class:`Backoff` (exponential backoff with jitter from a private generator) and
  :func:`parse_retry_after`;
* the errors integrations raise or subclass: :class:`OsmosisError`, :class:`PolicyError`,
  :class:`PolicyHTTPError`, :class:`PolicyTimeoutError`, :class:`NoActiveRolloutError`,
  :class:`ConfigurationError`.

Names resolve on first use, so importing this module costs nothing measurable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from osmosis_ai._lazy import exports_from
from osmosis_ai._lazy import lazy_exports as _lazy_exports
from osmosis_ai.rollout.optional_imports import with_install_hint


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """:func:`osmosis_ai._lazy.lazy_exports` for an integration package: a name whose module
    needs a framework that is not installed (``osmosis-strands`` without ``strands``) raises
    ``ModuleNotFoundError`` with the ``pip install 'osmosis-ai[...]'`` command to run."""
    resolve, listing = _lazy_exports(package, exports)

    def __getattr__(name: str) -> Any:
        try:
            return resolve(name)
        except ModuleNotFoundError as exc:
            hinted = with_install_hint(package, exc)
            if hinted is None:
                raise
            raise hinted from exc

    return __getattr__, listing


_CONTEXT = "osmosis_ai.rollout.context"
_POLICY = "osmosis_ai.rollout.policy"
_ERRORS = "osmosis_ai.errors"
_ENGINE = "osmosis_ai.rollout._execution"
_HOME = "osmosis_ai.rollout.home"
_EXPORTS = exports_from(
    {
        _ENGINE: "run_workflow_phase run_grader_phase validate_reward failure",
        _HOME: "rollout_dir osmosis_cache_dir",
        "osmosis_ai.rollout.project_files": "iter_project_files files_digest",
        "osmosis_ai.uv_binary": "find_uv UvNotFoundError",
        "osmosis_ai.atomic_file": "write_atomic",
        "osmosis_ai._util.redaction": "Redactor mask_url register_secret",
        "osmosis_ai._util.backoff": "Backoff parse_retry_after",
        _CONTEXT: (
            "RolloutContext SampleSource ConversationSampleSource get_rollout_context "
            "record_tool_error"
        ),
        "osmosis_ai.rollout.types.sample": "RolloutSample",
        "osmosis_ai.rollout.backend.local": "share_in_config_copies",
        "osmosis_ai.rollout.transcript": "WireTranscript",
        "osmosis_ai.rollout.chat_call": "complete_chat ChatAnswer",
        _POLICY: (
            "require_active_rollout policy_client aclose_policy_clients translate_policy_error "
            "translating_policy_errors usage_dict strict_chat_messages PolicyCall CallObserver "
            "bind_policy PolicyBinding policy_model_name restore_tool_arguments run_blocking"
        ),
        _ERRORS: (
            "OsmosisError PolicyError PolicyHTTPError PolicyTimeoutError NoActiveRolloutError "
            "ConfigurationError"
        ),
    }
)
__all__ = ["exports_from", "lazy_exports", *sorted(_EXPORTS)]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS (tests/test_lazy_exports.py checks it)
    from osmosis_ai._util.backoff import Backoff as Backoff
    from osmosis_ai._util.backoff import parse_retry_after as parse_retry_after
    from osmosis_ai._util.redaction import Redactor as Redactor
    from osmosis_ai._util.redaction import mask_url as mask_url
    from osmosis_ai._util.redaction import register_secret as register_secret
    from osmosis_ai.atomic_file import write_atomic as write_atomic
    from osmosis_ai.errors import ConfigurationError as ConfigurationError
    from osmosis_ai.errors import NoActiveRolloutError as NoActiveRolloutError
    from osmosis_ai.errors import OsmosisError as OsmosisError
    from osmosis_ai.errors import PolicyError as PolicyError
    from osmosis_ai.errors import PolicyHTTPError as PolicyHTTPError
    from osmosis_ai.errors import PolicyTimeoutError as PolicyTimeoutError
    from osmosis_ai.rollout._execution import failure as failure
    from osmosis_ai.rollout._execution import run_grader_phase as run_grader_phase
    from osmosis_ai.rollout._execution import run_workflow_phase as run_workflow_phase
    from osmosis_ai.rollout._execution import validate_reward as validate_reward
    from osmosis_ai.rollout.backend.local import share_in_config_copies as share_in_config_copies
    from osmosis_ai.rollout.chat_call import ChatAnswer as ChatAnswer
    from osmosis_ai.rollout.chat_call import complete_chat as complete_chat
    from osmosis_ai.rollout.context import ConversationSampleSource as ConversationSampleSource
    from osmosis_ai.rollout.context import RolloutContext as RolloutContext
    from osmosis_ai.rollout.context import SampleSource as SampleSource
    from osmosis_ai.rollout.context import get_rollout_context as get_rollout_context
    from osmosis_ai.rollout.context import record_tool_error as record_tool_error
    from osmosis_ai.rollout.home import osmosis_cache_dir as osmosis_cache_dir
    from osmosis_ai.rollout.home import rollout_dir as rollout_dir
    from osmosis_ai.rollout.policy import CallObserver as CallObserver
    from osmosis_ai.rollout.policy import PolicyBinding as PolicyBinding
    from osmosis_ai.rollout.policy import PolicyCall as PolicyCall
    from osmosis_ai.rollout.policy import aclose_policy_clients as aclose_policy_clients
    from osmosis_ai.rollout.policy import bind_policy as bind_policy
    from osmosis_ai.rollout.policy import policy_client as policy_client
    from osmosis_ai.rollout.policy import policy_model_name as policy_model_name
    from osmosis_ai.rollout.policy import require_active_rollout as require_active_rollout
    from osmosis_ai.rollout.policy import restore_tool_arguments as restore_tool_arguments
    from osmosis_ai.rollout.policy import run_blocking as run_blocking
    from osmosis_ai.rollout.policy import strict_chat_messages as strict_chat_messages
    from osmosis_ai.rollout.policy import translate_policy_error as translate_policy_error
    from osmosis_ai.rollout.policy import translating_policy_errors as translating_policy_errors
    from osmosis_ai.rollout.policy import usage_dict as usage_dict
    from osmosis_ai.rollout.project_files import files_digest as files_digest
    from osmosis_ai.rollout.project_files import iter_project_files as iter_project_files
    from osmosis_ai.rollout.transcript import WireTranscript as WireTranscript
    from osmosis_ai.rollout.types.sample import RolloutSample as RolloutSample
    from osmosis_ai.uv_binary import UvNotFoundError as UvNotFoundError
    from osmosis_ai.uv_binary import find_uv as find_uv
