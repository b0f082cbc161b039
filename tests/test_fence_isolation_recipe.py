"""Issue 31 (smaller items): process isolation says why a plugin cannot run in a worker.

A plugin class defined in ``__main__`` (the script being run) pickles by reference in the
host, but a worker process is a fresh interpreter whose ``__main__`` is not that script: the
worker failed at start-up and every call said only "its worker process exited with status 0".
Now the recipe is checked up front (:func:`hermes_host.fence.isolation.recipe_for`) and the
error names the class and the fix; and a worker that fails to start for any other reason
reports that reason even when the host's warm-up read it first."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from host_helpers import make_host

from hermes_host import CompressDecision, ShouldCompressRequest, hookimpl
from hermes_host.fence.isolation import recipe_for

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, sys, tempfile
from pathlib import Path
from hermes_host import CompressDecision, ShouldCompressRequest, hookimpl
from hermes_host.config import HermesConfig
from hermes_host.host import ContextHost

class MyEngine:
    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        return CompressDecision(compress=False, reason="mine")

config = HermesConfig.model_validate({
    "context": {"engine": "mine"}, "memory": {"providers": []},
    "engines": {"mine": {"fence": {"isolation": "process"}}},
})
with ContextHost.from_config(config, store=Path(sys.argv[1]) / "state.db",
                             extra_plugins={"mine": MyEngine()}) as host:
    session = host.open_session("t", "sys")
    session.add_user("hi")
    session.add_assistant("hello")
    outcome = session.end_turn()
    row = next(r for r in host.engine_health() if r["hook"] == "should_compress")
    print(json.dumps({"decided_by": outcome.decided_by, "error": row["last_error"],
                      "type": row["last_error_type"]}))
"""


def test_a_plugin_class_in_main_is_refused_with_the_class_and_the_fix(tmp_path: Path) -> None:
    """A real script run as ``python script.py`` (its classes live in ``__main__``)."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["decided_by"] == "host"  # the turn went on with the host's own rule
    error = result["error"]
    assert "exited with status" not in error
    assert "cannot be pickled" in error and "class MyEngine" in error
    assert "defined in __main__" in error and "importable module" in error
    assert result["type"] == "IsolationUnavailable"


def test_recipe_for_names_main_references_inside_an_instance() -> None:
    """An importable plugin class holding an object of a ``__main__`` class is refused too."""
    holder = _Holder(type("Local", (), {"__module__": "__main__"}))
    with pytest.raises(TypeError, match=r"class Local is defined in __main__"):
        recipe_for(holder, None)
    assert recipe_for(_Holder(None), None)  # an importable class pickles as before


def test_recipe_for_says_why_an_unpicklable_plugin_cannot_go_to_a_worker() -> None:
    def local() -> None:
        return None

    with pytest.raises(TypeError, match=r"cannot be pickled .*class _Holder: .*local"):
        recipe_for(_Holder(local), None)


def _refuse_to_start() -> Any:
    raise RuntimeError("no GPU in this process")


class _Holder:
    def __init__(self, value: Any) -> None:
        self.value = value

    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> CompressDecision:
        return CompressDecision(compress=False)


class _FailsInTheWorker(_Holder):
    """Pickles in the host; building it again in the worker raises."""

    def __reduce__(self) -> Any:
        return (_refuse_to_start, ())


def test_a_worker_that_failed_to_start_says_why_after_the_warm_up(tmp_path: Path) -> None:
    """The host reads the pre-started worker's first frame while warming up; the old code
    dropped the failure it read there, and the call then reported only that the worker
    exited."""
    engine = _FailsInTheWorker(None)
    with make_host(tmp_path, engine, name="w",
                   engines={"w": {"fence": {"isolation": "process"}}}) as host:
        session = host.open_session("t", "sys")
        session.add_user("hi")
        session.add_assistant("hello")
        session.end_turn()
        row = next(r for r in host.engine_health() if r["hook"] == "should_compress")
        assert "failed to start" in row["last_error"], row
        assert "no GPU in this process" in row["last_error"], row
