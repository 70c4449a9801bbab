"""osmosis_ai.testing.pytest_plugin, loaded the way a user's conftest.py loads it, in a suite
that does not set pytest-asyncio's auto mode."""

from __future__ import annotations

import pytest

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
