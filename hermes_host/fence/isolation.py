"""Process isolation: a plugin's hooks run in worker processes that are killed at the deadline.

``fence.isolation: process`` (globally, or per engine under ``engines.<name>.fence``) runs
the plugin in worker processes (:mod:`hermes_host.fence.worker`), ``fence.workers`` of them
kept started per plugin.  The request crosses as JSON; so does the answer, which the host
rebuilds and validates as its own objects.  At the deadline the worker is SIGKILLed — no
matter whether it holds the GIL, loops in C or allocates without end — and a fresh one is
started in its place.  A worker that exits (``os._exit``, a segfault, the memory limit) is
reported as ``error`` at once, without waiting for the deadline.  The engine's
``request.history`` is a proxy whose questions the host answers from its own read-only
reader.  A worker whose engine left threads running is retired after the call, so they
cannot touch a later call.
"""

from __future__ import annotations

import atexit
import io
import json
import pickle
import signal
import socket
import subprocess
import sys
import threading
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hermes_host.config import FenceSection
from hermes_host.fence.worker import read_frame, write_frame

__all__ = ["Outcome", "ProcessPool", "recipe_for"]

MAX_WORKERS = 4  # concurrent calls of one plugin; more wait for a free worker
_FRAME_SLACK = 64 * 1024  # a result frame may exceed the cap by its JSON envelope
_BOOT = "from hermes_host.fence.worker import main; main()"  # not -m: the package imports it


@dataclass
class Outcome:
    """What came back from a worker: ``kind`` is ``result`` (``reply`` holds the worker's
    result message), ``timeout``, ``died``, ``too_large``, ``refused`` or ``broken``."""

    kind: str
    reply: dict[str, Any] | None = None
    message: str = ""
    size: int = 0
    keep: bool = False  # the worker is sound (e.g. it was still starting): do not kill it
    body: bytes | None = None  # kind "json": the result model as JSON, parsed by the host


class _MainReferences(pickle.Pickler):
    """Pickles as usual, noting every class or function it meets that is defined in
    ``__main__``: a worker process is a fresh interpreter whose ``__main__`` is not the
    host's script, so it could not find them (it would fail while starting)."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.found: list[str] = []

    def persistent_id(self, obj: Any) -> None:
        if (isinstance(obj, type | types.FunctionType)
                and getattr(obj, "__module__", None) == "__main__"):
            name = f"{'class' if isinstance(obj, type) else 'function'} {obj.__qualname__}"
            if name not in self.found:
                self.found.append(name)
        return None


class _InMain(TypeError):
    """What a recipe would unpickle is defined in ``__main__``."""


def _pickled(recipe: tuple[Any, ...]) -> bytes:
    buffer = io.BytesIO()
    pickler = _MainReferences(buffer)
    try:
        pickler.dump(recipe)
    except Exception:
        if not pickler.found:
            raise
    if pickler.found:  # the clearer reason, also when pickling failed because of it
        raise _InMain(
            f"{', '.join(pickler.found)} is defined in __main__ (the script that was run), "
            "which a worker process cannot import; define it in an importable module (e.g. "
            "move it to my_engine.py next to the script and `from my_engine import ...`), or "
            "use fence.isolation: thread"
        )
    return buffer.getvalue()


def recipe_for(plugin: object, factory: tuple[Any, dict[str, Any] | None] | None) -> bytes:
    """The pickled recipe a worker builds its own copy of the plugin from: the entry point's
    class and ``options=`` when known (``factory``), else the instance itself.  Raises
    ``TypeError`` (with the reason) when neither can be pickled, or when what it would
    unpickle is defined in ``__main__`` (issue 31: the worker used to exit at start-up and
    the call said only "worker process exited with status 0")."""
    tried: list[str] = []
    for recipe in ((("factory", *factory),) if factory else ()) + (("instance", plugin),):
        try:
            return _pickled(recipe)
        except _InMain as exc:
            tried.append(str(exc))
        except Exception as exc:  # pickling runs arbitrary __reduce__ code
            what = (f"class {type(plugin).__qualname__}" if recipe[0] == "instance"
                    else f"factory {getattr(recipe[1], '__qualname__', recipe[1])!r}")
            tried.append(f"{what}: {type(exc).__name__}: {exc}")
    raise TypeError("cannot hand the plugin to a worker process: it cannot be pickled for "
                    "one (" + "; ".join(dict.fromkeys(tried)) + ")")


class _Worker:
    __slots__ = ("failed", "proc", "ready", "sock")

    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket) -> None:
        self.proc = proc
        self.sock = sock
        self.ready = False
        self.failed: str | None = None  # why it failed to start, once its hello said so

    def kill(self) -> None:
        """SIGKILL now; the exit status is collected by a daemon thread (no zombie, and no
        wait on the caller's time)."""
        try:
            self.proc.send_signal(signal.SIGKILL)
        except (ProcessLookupError, OSError):
            pass
        try:
            self.sock.close()
        except OSError:
            pass
        if self.proc.returncode is None:
            threading.Thread(target=self.proc.wait, name="hermes-fence-reaper", daemon=True).start()


_LIVE: weakref.WeakSet[ProcessPool] = weakref.WeakSet()


@atexit.register
def _kill_all() -> None:  # workers die with the host anyway (EOF, parent-death signal)
    for pool in list(_LIVE):
        pool.close()


class ProcessPool:
    """The worker processes of one plugin."""

    def __init__(self, name: str, recipe: bytes, settings: FenceSection) -> None:
        self.name = name
        self._recipe = recipe
        self._settings = settings
        self._cap = settings.max_result_bytes
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._busy = 0
        self._closed = False
        _LIVE.add(self)
        for _ in range(settings.workers):
            self._idle.append(self._spawn())

    def _spawn(self) -> _Worker:
        parent, child = socket.socketpair()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(child.fileno())],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                close_fds=True,
            )
        finally:
            child.close()
        settings = {
            "name": self.name,
            "sys_path": list(sys.path),
            "cap": self._cap,
            "memory_limit_mb": self._settings.memory_limit_mb,
        }
        write_frame(parent, json.dumps(settings).encode())
        write_frame(parent, self._recipe)
        return _Worker(proc, parent)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            workers, self._idle = self._idle, []
        for worker in workers:
            worker.kill()

    def state(self) -> dict[str, int]:
        with self._cond:
            return {"idle": len(self._idle), "busy": self._busy}

    # -- one call --------------------------------------------------------------------------

    def call(
        self,
        hook: str,
        request: BaseModel,
        history: Any,
        deadline: float,
        timer: Callable[[], float],
    ) -> Outcome:
        worker = self._acquire(deadline, timer)
        if worker is None:
            return Outcome(
                "timeout",
                message=f"all {MAX_WORKERS} worker processes were busy until the deadline",
            )
        keep = False
        try:
            outcome = self._run(worker, hook, request, history, deadline, timer)
            threads = int((outcome.reply or {}).get("threads", 1))
            keep = outcome.keep or (outcome.kind == "result" and threads <= 1)
            return outcome
        finally:
            self._release(worker, keep)

    def _acquire(self, deadline: float, timer: Callable[[], float]) -> _Worker | None:
        with self._cond:
            while True:
                if self._idle:  # a ready worker first; one still starting only if none is
                    ready = [w for w in self._idle if w.ready]
                    worker = ready[-1] if ready else self._idle[-1]
                    self._idle.remove(worker)
                    self._busy += 1
                    return worker
                if self._busy < MAX_WORKERS:
                    self._busy += 1
                    break
                left = deadline - timer()
                if left <= 0:
                    return None
                self._cond.wait(left)
        try:
            return self._spawn()  # cold: its start-up counts against this call's deadline
        except BaseException:
            with self._cond:
                self._busy -= 1
            raise

    def _release(self, worker: _Worker, keep: bool) -> None:
        if not keep or self._closed:
            worker.kill()
        with self._cond:
            self._busy -= 1
            if keep and not self._closed:
                self._idle.append(worker)
            else:
                if not self._closed and len(self._idle) + self._busy < self._settings.workers:
                    try:
                        self._idle.append(self._spawn())  # the replacement warms up meanwhile
                    except OSError:
                        pass
            self._cond.notify()

    def _run(
        self,
        worker: _Worker,
        hook: str,
        request: BaseModel,
        history: Any,
        deadline: float,
        timer: Callable[[], float],
    ) -> Outcome:
        sock = worker.sock
        try:
            if worker.failed is not None:  # read by wait_ready: the first call says why
                return Outcome("refused", message=worker.failed)
            if not worker.ready:
                try:
                    failed = self._hello(worker, deadline, timer)
                except TimeoutError:
                    return Outcome(
                        "timeout", message="its worker process was still starting", keep=True
                    )
                if failed is not None:
                    return Outcome("refused", message=failed)
            payload = request.model_dump_json(
                exclude={"history"} if history is not None else None
            ).encode("utf-8", "surrogatepass")
            call = {
                "op": "call",
                "hook": hook,
                "request_type": f"{type(request).__module__}:{type(request).__qualname__}",
                "history": history is not None,
            }
            self._write(sock, call, deadline, timer, payload)
            while True:
                reply = self._read(sock, deadline, timer, self._cap + _FRAME_SLACK)
                if reply.get("op") == "history":
                    self._answer(sock, history, reply, deadline, timer)
                    continue
                if reply.get("op") != "result":
                    return Outcome("broken", message=f"unexpected frame {reply.get('op')!r}")
                if reply.get("kind") == "too_large":
                    return Outcome("too_large", size=int(reply.get("size", 0)))
                if reply.get("kind") == "json":  # the result model's JSON, one more frame
                    sock.settimeout(max(deadline - timer(), 0.001))
                    body = read_frame(sock, self._cap)  # socket.timeout is a TimeoutError
                    return Outcome("result", reply=reply, body=body)
                return Outcome("result", reply=reply)
        except TimeoutError:
            return Outcome("timeout")
        except OverflowError as exc:
            return Outcome("too_large", size=int(exc.args[0]))
        except (EOFError, ConnectionError, OSError):
            return Outcome("died", message=self._death(worker))
        except (ValueError, TypeError, AttributeError) as exc:  # not JSON, not a dict
            return Outcome("broken", message=f"unreadable reply ({type(exc).__name__})")

    def _hello(self, worker: _Worker, deadline: float, timer: Callable[[], float]) -> str | None:
        """Read a starting worker's first frame: None once it is ready, else why it failed."""
        hello = self._read(worker.sock, deadline, timer, 1 << 20)
        if hello.get("op") != "ready":
            worker.failed = ("its worker process failed to start: "
                             f"{str(hello.get('error', hello))[:1000]}")
            return worker.failed
        worker.ready = True
        return None

    def wait_ready(self, seconds: float, timer: Callable[[], float]) -> None:
        """Wait (at most ``seconds``) for the pre-started workers, so the first call does not
        pay their start-up; a failure is reported by the first call."""
        deadline = timer() + seconds
        with self._cond:
            starting = [w for w in self._idle if not w.ready]
        for worker in starting:
            try:
                self._hello(worker, deadline, timer)
            except (TimeoutError, EOFError, OSError, ValueError, TypeError):
                return

    @staticmethod
    def _death(worker: _Worker) -> str:
        try:
            code = worker.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "its worker process closed the connection"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return f"its worker process was killed by {name}"
        return f"its worker process exited with status {code}"

    @staticmethod
    def _read(
        sock: socket.socket, deadline: float, timer: Callable[[], float], limit: int
    ) -> dict[str, Any]:
        left = deadline - timer()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        try:
            value = json.loads(read_frame(sock, limit))
        except TimeoutError:
            raise TimeoutError from None
        if not isinstance(value, dict):
            raise TypeError("a frame must be a JSON object")
        return value

    @staticmethod
    def _write(
        sock: socket.socket,
        message: dict[str, Any],
        deadline: float,
        timer: Callable[[], float],
        payload: bytes,
    ) -> None:
        """The call frame, then the request's own JSON in a frame of its own (not a JSON
        string inside JSON: that would escape and parse it twice)."""
        left = deadline - timer()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        head = json.dumps(message).encode("utf-8", "surrogatepass")
        write_frame(sock, head)  # socket.timeout is a TimeoutError
        write_frame(sock, payload)

    def _answer(
        self,
        sock: socket.socket,
        history: Any,
        question: dict[str, Any],
        deadline: float,
        timer: Callable[[], float],
    ) -> None:
        """Answer one history question from the host's own (read-only) reader."""
        method, kwargs = question.get("method"), question.get("kwargs") or {}
        answer: dict[str, Any]
        try:
            if history is None:
                raise LookupError("this request has no history")
            if method == "search":
                value: Any = history.search(
                    str(kwargs["query"]),
                    limit=int(kwargs.get("limit", 20)),
                    lineage=bool(kwargs.get("lineage", True)),
                )
            elif method == "messages":
                inactive = bool(kwargs.get("include_inactive", True))
                value = history.messages(include_inactive=inactive)
            else:
                raise LookupError(f"no history method {method!r}")
            answer = {"value": value}
            text = json.dumps(answer, default=str)
        except Exception as exc:
            text = json.dumps({"error": f"{type(exc).__name__}: {exc}"[:1000]})
        left = deadline - timer()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        try:
            write_frame(sock, text.encode("utf-8", "surrogatepass"))
        except TimeoutError:
            raise TimeoutError from None

