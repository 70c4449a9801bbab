"""osmosis_ai.testing.pytest_plugin, loaded the way a user's conftest.py loads it, in a suite
that does not set pytest-asyncio's auto mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from osmosis_ai.testing.pytest_plugin import built_once

pytest_plugins = ["pytester"]


def test_the_plugin_gives_a_home_a_policy_and_a_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OSMOSIS_API_KEY", "from-the-developer-shell")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest('pytest_plugins = ["osmosis_ai.testing.pytest_plugin"]\n')
    pytester.makepyfile(
        """
        import os

        import httpx
        import pytest
        from starlette.applications import Starlette
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route


        def test_home(osmosis_home, tmp_path):
            assert os.environ["OSMOSIS_HOME"] == str(tmp_path / "osmosis-home") == str(osmosis_home)
            assert "OSMOSIS_API_KEY" not in os.environ


        @pytest.mark.asyncio
        async def test_policy_and_server(multiply_policy, rollout_server):
            app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("up"))])
            async with rollout_server(app) as url, httpx.AsyncClient() as client:
                assert (await client.get(url)).text == "up"
                reply = await client.post(
                    multiply_policy.chat_completions_url("r1") + "/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": "6 times 7?"}]},
                )
            call = reply.json()["choices"][0]["message"]["tool_calls"][0]
            assert call["function"]["name"] == "multiply"
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "asyncio")
    result.assert_outcomes(passed=2)


def test_built_once_builds_once_and_retries_a_failed_build(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    calls: list[Path] = []

    def failing(folder: Path) -> Path:
        (folder / "half-done").write_text("x")
        raise RuntimeError("build failed")

    def build(folder: Path) -> Path:
        calls.append(folder)
        assert not (folder / "half-done").exists()  # the failed attempt's leftovers are gone
        (folder / "product").write_text("built")
        return folder / "product"

    with pytest.raises(RuntimeError, match="build failed"):
        built_once(tmp_path_factory, "plugin-test", failing)
    first = built_once(tmp_path_factory, "plugin-test", build)
    again = built_once(tmp_path_factory, "plugin-test", build)
    assert first == again
    assert first.read_text() == "built"
    assert len(calls) == 1
