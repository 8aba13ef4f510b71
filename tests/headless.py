"""Drive a real headless Chromium over the DevTools protocol on a pipe (``--remote-debugging-pipe``: commands on
file descriptor 3, replies and events on 4, each message JSON ended by a NUL byte), with the standard library only:
load a page, collect its console errors and uncaught exceptions, type into it, evaluate expressions."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = (  # headless, no sandbox (containers), nothing fetched in the background
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


class Browser:
    """One headless Chromium with one page; ``errors`` gathers console errors, exceptions and error log entries."""

    def __init__(self, profile: Path, timeout: float = 60.0):
        if CHROMIUM is None:
            raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
        self.timeout = timeout
        to_child, self._out = os.pipe()  # we write commands, Chromium reads them on fd 3
        self._in, from_child = os.pipe()  # Chromium writes on fd 4, we read

        def wire() -> None:  # in the child, before exec: the two pipe ends at 3 and 4
            a, b = os.dup(to_child), os.dup(from_child)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,
            close_fds=False,
            env={**os.environ, "HOME": str(profile)},
        )
        os.close(to_child)
        os.close(from_child)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        self.errors: list[str] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=True)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def _note(self, msg: dict) -> None:
        self.events.append(msg)
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.errors.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append("console: " + json.dumps(params.get("args", []))[:500])
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append("log: " + params["entry"].get("text", "")[:500])

    def call(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._note(reply)

    def wait_for(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        for seen in self.events:
            if seen.get("method") == method:
                return seen
        while True:
            msg = self._read(deadline)
            self._note(msg)
            if msg.get("method") == method:
                return msg

    def load(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def type_text(self, text: str) -> None:
        """Text typed into the focused element, as a keyboard would insert it (its input events fire)."""
        self.call("Input.insertText", {"text": text}, session=True)

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._in)
        os.close(self._out)
