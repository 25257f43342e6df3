"""One lock per output directory: ``fcntl.flock`` on a lock file inside it (the build's and the runner's).

Method: the lock file is opened with ``O_NOFOLLOW`` and without ``O_TRUNC`` (a symbolic link
there is refused, and opening never changes a byte), then checked on the descriptor: it must be a
regular file with exactly one link whose content is what a lock holds (empty, or a pid line). A
hard link to a user's file, or a user's own file of that name, is refused with
:class:`LockFileError` before anything is written to it. It is then locked with a non-blocking
``flock`` retried every ``poll`` seconds until ``wait`` has passed; it holds the holder's pid while
held and is emptied on release, so a finished run leaves it empty. The kernel drops the lock when
the holder dies, so a killed run never blocks the next one.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

from analysis.safeio.errors import SafeIOError

_LOCK_CONTENT = re.compile(rb"(?:[0-9]{1,20}\n?)?")
"""What a lock file of ours holds: nothing, or the holder's pid and a newline."""


class LockFileError(SafeIOError):
    """The lock file's path names something that is not a lock file of ours (a hard link to another
    file, a user's own file, not a regular file); nothing was written to it. The message says the fix."""


def check_lock_file(fd: int, path: Path) -> None:
    """Refuse (LockFileError) an open lock file that this package did not create: not a regular file,
    more than one link (a hard link: truncating it would empty the other name's file), or content
    other than a lock's. Reads at most 32 bytes; writes nothing."""
    st = os.fstat(fd)
    fix = "remove it (or move that file elsewhere) and run again; the lock file is created afresh"
    if not stat.S_ISREG(st.st_mode):
        raise LockFileError(path, f"is not a regular file; {fix}")
    if st.st_nlink != 1:
        raise LockFileError(path, f"has {st.st_nlink} hard links, so it is also another file's name and "
                                  f"locking would empty that file; {fix}")
    head = os.pread(fd, 32, 0)
    if st.st_size > 21 or not _LOCK_CONTENT.fullmatch(head):
        raise LockFileError(path, f"holds data that is not a lock's (a pid), so it is not a lock file this "
                                  f"program created; {fix}")


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
        try:
            check_lock_file(fd, self.path)
        except BaseException:
            os.close(fd)
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
            check_lock_file(fd, self.path)  # again under the lock: a link made while we waited
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
            if os.fstat(fd).st_nlink == 1:  # a hard link made while held: leave its bytes alone
                os.ftruncate(fd, 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
