"""Start a sweep in its own process group and kill it once it reports a given commit."""

from __future__ import annotations

import os
import signal
import subprocess


def kill_at_commit(cmd: list[str], line_prefix: str) -> int:
    """Run ``cmd``; SIGKILL its process group when a stderr line starts with ``line_prefix``; the return code."""
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith(line_prefix):
            os.killpg(proc.pid, signal.SIGKILL)
            break
    return proc.wait()
