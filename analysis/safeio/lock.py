"""One lock per output directory: ``fcntl.flock`` on a lock file inside it (the build's and the runner's).

Method: the lock file is opened with ``O_NOFOLLOW`` (a symbolic link there is refused), locked
with a non-blocking ``flock`` retried every ``poll`` seconds until ``wait`` has passed; it holds
the holder's pid while held and is emptied on release, so a finished run leaves it empty. The
kernel drops the lock when the holder dies, so a killed run never blocks the next one.
"""
from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

from analysis.safeio.errors import SafeIOError


class DirLock:
    """``with DirLock(path, wait, on_wait, on_busy):`` holds the lock file ``path`` exclusively.

    ``on_wait(holder)`` is called once when the lock is busy and waiting starts; ``on_busy(holder,
    waited)`` returns the exception raised when ``wait`` seconds pass (default: SafeIOError).
    ``holder`` reads like ``pid 1234``.
    """

    def __init__(self, path: Path, wait: float = 0.0, *, on_wait: Callable[[str], None] = lambda _h: None,
                 on_busy: Callable[[str, float], BaseException] | None = None, poll: float = 0.2) -> None:
        self.path, self.wait, self.poll = Path(path), max(0.0, float(wait)), poll
        self.on_wait, self.on_busy = on_wait, on_busy
        self._fd: int | None = None

    @staticmethod
    def holder(fd: int) -> str:
        """``pid N`` of the holder as it wrote itself into the file, or ``pid unknown``."""
        try:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        except OSError:
            text = ""
        return f"pid {text}" if text.isdigit() else "pid unknown"

    def __enter__(self) -> Self:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SafeIOError(self.path, "is a symbolic link; remove it and run again") from None
            raise
        deadline = time.monotonic() + self.wait
        announced = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    holder = self.holder(fd)
                    if time.monotonic() >= deadline:
                        if self.on_busy is not None:
                            raise self.on_busy(holder, self.wait) from None
                        raise SafeIOError(self.path, f"is held by another process ({holder}); let it finish "
                                                     "and run again") from None
                    if not announced:
                        self.on_wait(holder)
                        announced = True
                    time.sleep(self.poll)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(self, *_exc: object) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
