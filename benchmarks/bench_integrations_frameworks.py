"""What hermes-host adds per turn inside the OpenAI Agents SDK, LangChain and LangGraph
(issue 18): the same conversation through each framework with and without hermes-host,
interleaved in one run.

Run: ``python benchmarks/bench_integrations_frameworks.py [--turns N]``.  Prints one markdown
section.  A framework that is not installed is reported as skipped (``nox -s bench``
installs the ``openai-agents`` and ``langchain`` extras).

Each turn is one user message, one tool call, its result and an answer (two model calls):

* **OpenAI Agents SDK** — ``Runner.run`` on the SDK's Chat Completions model against the
  loopback fake server (real HTTP, real ``openai`` client).  Baseline: the SDK's own
  ``SQLiteSession`` on a file; hermes-host: ``HermesSession`` on a file store.
* **LangChain** — ``create_agent`` with langchain-core's fake chat model and an
  ``InMemorySaver`` checkpointer.  Baseline: no middleware; hermes-host:
  ``HermesContextMiddleware``.
* **LangGraph** — ``create_react_agent`` likewise, with and without ``hermes_pre_model_hook``
  (and its ``post_model_hook``).

hermes-host runs the default ``compressor`` with a 128K window (nothing to compress in these
turns): the figure is the cost of storing every message, counting tokens, asking
``should_compress`` through the fence and building the window — what every turn pays.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _targets import Targets

from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost

TARGET_ADDED_MS = 25.0
"""hermes-host's own cost per turn (median, with − without), in milliseconds."""


def hermes_host(root: Path, name: str) -> ContextHost:
    config = HermesConfig.model_validate({
        "context": {"engine": "compressor"},
        "memory": {"providers": []},
        "model": {"name": "gpt-4o", "context_length": 128_000, "max_output_tokens": 4096},
        "summarizer": {"provider": "offline"},
    })
    host = ContextHost.from_config(config, store=root / f"{name}.db")
    host.tokens.count({"role": "user", "content": "load the tokenizer before timing"})
    return host


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


# -- OpenAI Agents SDK ---------------------------------------------------------------------


class TimedSession:
    """Forwards to a ``Session``, adding the time its calls take to ``spent`` (the session's
    own share of a turn, apart from the model's HTTP round trips)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.spent = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _timed(self, name: str, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await getattr(self.inner, name)(*args, **kwargs)
        finally:
            self.spent += time.perf_counter() - t0

    async def get_items(self, limit: int | None = None) -> Any:
        return await self._timed("get_items", limit)

    async def add_items(self, items: Any) -> None:
        await self._timed("add_items", items)

    async def pop_item(self) -> Any:
        return await self._timed("pop_item")

    async def clear_session(self) -> None:
        await self._timed("clear_session")


def bench_openai_agents(root: Path, turns: int, rounds: int) -> dict[str, list[float]]:
    import agents
    from agents import Agent, OpenAIChatCompletionsModel, Runner, SQLiteSession, function_tool
    from openai import AsyncOpenAI

    from hermes_host.integrations.openai_agents import HermesSession
    from hermes_host.testing.fake_openai import FakeOpenAI

    agents.set_tracing_disabled(True)

    def responder(body: Any) -> Any:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"content": "answer: " + "conclusion " * 60}
        return {"content": "", "tool_calls": [{"name": "lookup", "arguments": {"topic": "x"}}]}

    @function_tool
    def lookup(topic: str) -> str:
        """Look a topic up."""
        return f"facts about {topic}: " + "detail " * 80

    samples: dict[str, list[float]] = {"without": [], "with": [], "session without": [],
                                       "session with": []}
    with FakeOpenAI(responder=responder) as fake:
        async def run_all() -> None:
            client = AsyncOpenAI(base_url=fake.base_url, api_key="sk-bench", max_retries=0)
            model = OpenAIChatCompletionsModel(model="gpt-fake-1", openai_client=client)
            agent = Agent(name="bench", instructions="Use lookup, then answer.", model=model,
                          tools=[lookup])
            try:
                for r in range(rounds):
                    host = hermes_host(root, f"oai-{r}")
                    sdk = SQLiteSession(f"bench-{r}", root / f"sdk-{r}.db")
                    variants = {
                        "without": TimedSession(sdk),
                        "with": TimedSession(HermesSession(f"bench-{r}", host=host)),
                    }
                    for n in range(turns):
                        for name, session in variants.items():
                            before = session.spent
                            t0 = time.perf_counter()
                            await Runner.run(agent, f"turn {n}: tell me more", session=session)
                            samples[name].append(time.perf_counter() - t0)
                            samples[f"session {name}"].append(session.spent - before)
                    sdk.close()
                    host.close()
            finally:
                await client.close()

        asyncio.run(run_all())
    return samples


# -- LangChain / LangGraph -----------------------------------------------------------------


def _fake_model(turns: int) -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class ToolFakeModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    def script() -> Iterator[AIMessage]:
        for n in range(turns):
            yield AIMessage("", tool_calls=[{"name": "lookup", "args": {"topic": f"t{n}"},
                                             "id": f"call_{n}", "type": "tool_call"}])
            yield AIMessage(f"answer {n}: " + "conclusion " * 60)

    return ToolFakeModel(messages=script())


def _lookup_tool() -> Any:
    from langchain_core.tools import tool

    @tool
    def lookup(topic: str) -> str:
        """Look a topic up."""
        return f"facts about {topic}: " + "detail " * 80

    return lookup


def bench_langchain(root: Path, turns: int, rounds: int, *, graph: bool) -> dict[str, list[float]]:
    from langgraph.checkpoint.memory import InMemorySaver

    samples: dict[str, list[float]] = {"without": [], "with": []}
    lookup = _lookup_tool()
    for r in range(rounds):
        host = hermes_host(root, f"{'lg' if graph else 'lc'}-{r}")
        built: dict[str, Any] = {}
        for name in ("without", "with"):
            model = _fake_model(turns)
            if graph:
                from hermes_host.integrations.langgraph import hermes_pre_model_hook

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    from langgraph.prebuilt import create_react_agent

                    hooks: dict[str, Any] = {}
                    if name == "with":
                        hook = hermes_pre_model_hook(host)
                        hooks = {"pre_model_hook": hook, "post_model_hook": hook.post_model_hook}
                    built[name] = create_react_agent(model, [lookup], checkpointer=InMemorySaver(),
                                                     **hooks)
            else:
                from langchain.agents import create_agent

                from hermes_host.integrations.langchain import HermesContextMiddleware

                middleware = [HermesContextMiddleware(host)] if name == "with" else []
                built[name] = create_agent(model, [lookup], middleware=middleware,
                                           checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": f"bench-{r}"}}
        for n in range(turns):
            for name, agent in built.items():
                t0 = time.perf_counter()
                agent.invoke({"messages": [{"role": "user", "content": f"turn {n}: more"}]},
                             config)
                samples[name].append(time.perf_counter() - t0)
        host.close()
    return samples


# -- report --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30, help="turns per conversation")
    parser.add_argument("--rounds", type=int, default=3, help="conversations per variant")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args, _ = parser.parse_known_args(argv)
    targets = Targets("framework integrations")

    benches: list[tuple[str, str, Callable[[Path], dict[str, list[float]]]]] = [
        ("OpenAI Agents SDK", "agents",
         lambda root: bench_openai_agents(root, args.turns, args.rounds)),
        ("LangChain `create_agent`", "langchain",
         lambda root: bench_langchain(root, args.turns, args.rounds, graph=False)),
        ("LangGraph `create_react_agent`", "langgraph",
         lambda root: bench_langchain(root, args.turns, args.rounds, graph=True)),
    ]
    rows: list[str] = []
    notes: list[str] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench_frameworks_") as tmp:
        for label, module, bench in benches:
            if importlib.util.find_spec(module) is None:
                skipped.append(f"{label} (`{module}` not installed)")
                continue
            root = Path(tmp) / module
            root.mkdir()
            with contextlib.redirect_stderr(sys.stderr):
                samples = bench(root)
            if "session with" in samples:  # the session's own calls, apart from the HTTP
                without = median_ms(samples["session without"])
                with_ = median_ms(samples["session with"])
                whole = (median_ms(samples["without"]), median_ms(samples["with"]))
                notes.append(f"OpenAI Agents SDK, whole turn (two loopback HTTP model calls "
                             f"included): {whole[0]:.1f} ms with the SDK's `SQLiteSession`, "
                             f"{whole[1]:.1f} ms with `HermesSession` "
                             f"({whole[1] / whole[0]:.2f}×).")
                label = f"{label} (session calls per turn)"
            else:
                without, with_ = median_ms(samples["without"]), median_ms(samples["with"])
            check = targets.check(f"{label}: added per turn", with_ - without, "<=",
                                  TARGET_ADDED_MS, "{:.1f} ms", "{:.0f} ms")
            rows.append(f"| {label} | {without:.1f} | {with_:.1f} | {with_ - without:.1f} | "
                        f"{with_ / without:.2f}× | {check.target_text} |")

    print("## framework integrations\n")
    print(f"One conversation of {args.turns} turns per variant and round, {args.rounds} rounds, "
          "the variants interleaved turn by turn; each turn is a user message, a tool call, its "
          "result and an answer (two model calls). Median wall time per turn. hermes-host: "
          "`compressor`, 128K window (no compression due), SQLite store on a file.\n")
    if rows:
        print("| framework | without hermes-host, ms | with, ms | added, ms | ratio | target |")
        print("|---|---:|---:|---:|---:|---|")
        print("\n".join(rows))
        print()
        print("- OpenAI Agents SDK: the time the runner spends in the session's calls "
              "(`get_items`, `add_items`) per turn, the SDK's own `SQLiteSession` on a file vs "
              "`HermesSession` — the whole turn also holds two model calls over loopback HTTP, "
              "whose noise on this shared machine is larger than the difference.")
        print("- LangChain and LangGraph: the whole `invoke` per turn, the same agent with and "
              "without hermes-host, on langchain-core's in-process fake model — the ratio is "
              "against a turn that does almost nothing else; LangGraph's figure includes the "
              "two extra graph nodes (pre and post hook) and their checkpoints.")
        for note in notes:
            print(f"- {note}")
    for line in skipped:
        print(f"- skipped: {line}")
    return targets.finish(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
