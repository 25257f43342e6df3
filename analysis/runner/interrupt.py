"""How the runner stops on SIGTERM or Ctrl-C: one line and exit 143 (SIGTERM) or 130 (SIGINT).

Methods note: one Python-level handler takes both signals for the whole command (`handling`).
Outside an event loop it raises `Interrupted` (a KeyboardInterrupt) where the main thread is, so
context managers (the embedded server, the ledger) close.  While `run` drives a coroutine, the
handler never raises into loop code: it schedules a cancel of the coroutine's task on the loop
(`call_soon_threadsafe`), the task winds down at its awaits, and `run` raises `Interrupted` only
after the loop has closed.  Once stopping, later signals are ignored, so a second SIGTERM cannot
raise inside the wind-down.  The handler is never borrowed from SIGINT: a background job
(``... &``, nohup) inherits SIGINT ignored, and SIGTERM must still stop it cleanly; SIGINT stays
ignored then.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
"""Exit status per signal (128 + the signal number, as a shell reports it)."""


class Interrupted(KeyboardInterrupt):
    """The command was stopped by `signum`; the CLI prints one line and exits EXIT_CODES[signum]."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(signal.Signals(self.signum), 130)


class _State:
    """What the handler does now: stop a running coroutine, or raise where the main thread is."""

    def __init__(self) -> None:
        self.signum: int | None = None  # the signal that started the stop, once one came
        self.cancel: Callable[[], None] | None = None  # cancels the coroutine `run` drives
        self.in_loop = False  # inside `run`'s asyncio.run, from loop start to loop close

    def handle(self, signum: int, _frame: Any) -> None:
        if self.signum is not None:
            return  # already stopping: later signals are ignored
        self.signum = signum
        cancel = self.cancel
        if cancel is None and not self.in_loop:
            raise Interrupted(signum)
        if cancel is not None:  # else the loop is starting or closing: `run` raises once it returned
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: likewise
                cancel()


_STATE = _State()


@contextlib.contextmanager
def handling(*, ignore_after_stop: bool = False) -> Iterator[None]:
    """Route SIGTERM (and SIGINT, unless it is ignored) to the runner's handler for the block.

    With `ignore_after_stop` (the command line, whose process ends after the block), a block that a
    signal stopped leaves both signals ignored instead of restoring the previous handlers, so a
    second SIGTERM while the process exits cannot kill it without its exit status.
    """
    global _STATE
    _STATE = _State()
    sigs = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # a background job keeps ignoring Ctrl-C
        sigs.append(signal.SIGINT)
    previous = {s: signal.signal(s, _STATE.handle) for s in sigs}
    try:
        yield
    finally:
        stopped = _STATE.signum is not None and ignore_after_stop
        for s, h in previous.items():
            signal.signal(s, signal.SIG_IGN if stopped else h)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``; a signal cancels `coro` on its loop and raises Interrupted afterwards."""
    state = _STATE
    if state.signum is not None:  # stopped before the loop started
        coro.close()
        raise Interrupted(state.signum)

    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()

        def cancel() -> None:
            if task is not None:
                loop.call_soon_threadsafe(task.cancel)

        state.cancel = cancel
        try:
            if state.signum is not None:  # it came while the loop was starting
                coro.close()
                raise asyncio.CancelledError
            return await coro
        finally:
            state.cancel = None

    state.in_loop = True
    try:
        result = asyncio.run(main())
    except (Exception, asyncio.CancelledError):
        if state.signum is None:
            raise
        raise Interrupted(state.signum) from None  # whatever the wind-down raised, the run was stopped
    finally:
        state.in_loop = False
    if state.signum is not None:  # the signal came after the coroutine finished: stop now
        raise Interrupted(state.signum)
    return result
