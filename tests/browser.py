"""A real browser for the report's tests: headless chromium driven over the DevTools protocol.

``load_page`` starts chromium (``--headless --no-sandbox --disable-gpu``, an empty
profile, every connection sent to a proxy that refuses it and every host name
unresolvable), opens one page, and returns what happened: console messages, uncaught
exceptions, the browser's log entries (a blocked resource, a CSP violation), every
network request the page made, the value of a DOM check run in the page, and a
full-page screenshot. The protocol goes over aiohttp's websocket client (aiohttp is a
dependency of tuner already). The browser's whole process group is stopped after.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psutil

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    # No request leaves: every connection goes to a proxy nobody listens on, and no name
    # resolves. A page that tries one shows it as a request and a failed load.
    "--proxy-server=127.0.0.1:1",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-port=0",
    "--window-size=1280,1000",
)


def find_chromium() -> str | None:
    """``$TUNER_CHROMIUM``, else the first chromium or chrome on PATH."""
    named = os.environ.get("TUNER_CHROMIUM")
    if named:
        return named if shutil.which(named) else None
    return next((path for n in CHROMIUM_NAMES if (path := shutil.which(n))), None)


@dataclass
class PageLoad:
    """What one page load showed."""

    console: list[tuple[str, str]] = field(default_factory=list)
    """(type, text) of each console call: log, info, warning, error, ..."""
    exceptions: list[str] = field(default_factory=list)
    log: list[tuple[str, str, str]] = field(default_factory=list)
    """(level, source, text) of the browser's own log entries."""
    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    dom: Any = None
    screenshot: bytes = b""


def load_page(
    chromium: str, url: str, *, check: str, profile: Path, timeout_s: float = 60
) -> PageLoad:
    """Open ``url`` in a fresh headless chromium with an empty ``profile`` folder; run the
    JavaScript expression ``check`` after the load (its value is ``PageLoad.dom``)."""
    profile.mkdir(parents=True, exist_ok=False)  # empty: no state from another run
    process = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its zygote and renderers with it: one group to stop
    )
    try:
        port = _devtools_port(profile, process, timeout_s)
        return asyncio.run(asyncio.wait_for(_drive(port, url, check), timeout_s))
    finally:
        _stop_group(process)


def _devtools_port(profile: Path, process: subprocess.Popen[bytes], timeout_s: float) -> int:
    """The port chromium chose, from the DevToolsActivePort file it writes in the profile."""
    deadline = time.monotonic() + timeout_s
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with code {process.returncode} at start")
        if marker.exists():
            first = marker.read_text().splitlines()[:1]
            if first and first[0].isdigit():
                return int(first[0])
        time.sleep(0.05)
    raise RuntimeError(f"chromium wrote no DevToolsActivePort in {timeout_s:g} s")


async def _drive(port: int, url: str, check: str) -> PageLoad:
    result = PageLoad()
    async with aiohttp.ClientSession(trust_env=False) as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json()
        page = next(t for t in targets if t.get("type") == "page")
        async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            session = _Session(ws, result)
            for domain in ("Runtime", "Log", "Network", "Page"):
                await session.call(f"{domain}.enable")
            loaded = session.expect("Page.loadEventFired")
            await session.call("Page.navigate", url=url)
            await loaded
            await asyncio.sleep(0.3)  # late console messages and requests
            value = await session.call(
                "Runtime.evaluate", expression=check, returnByValue=True, awaitPromise=True
            )
            result.dom = value.get("result", {}).get("value")
            metrics = await session.call("Page.getLayoutMetrics")
            height = int(metrics["cssContentSize"]["height"])
            await session.call(
                "Emulation.setDeviceMetricsOverride",
                width=1280,
                height=min(max(height, 600), 16000),
                deviceScaleFactor=1,
                mobile=False,
            )
            shot = await session.call("Page.captureScreenshot", format="png")
            result.screenshot = base64.b64decode(shot["data"])
    return result


class _Session:
    """Calls and events of one DevTools page session; events land in a PageLoad."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, result: PageLoad) -> None:
        self.ws, self.result = ws, result
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.waiting: dict[str, asyncio.Future[None]] = {}
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[ident] = future
        await self.ws.send_str(json.dumps({"id": ident, "method": method, "params": params}))
        return await future

    def expect(self, event: str) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting[event] = future
        return future

    async def _read(self) -> None:
        async for message in self.ws:
            data = json.loads(message.data)
            if "id" in data:
                future = self.pending.pop(data["id"], None)
                if future is not None and not future.done():
                    if "error" in data:
                        future.set_exception(RuntimeError(str(data["error"])))
                    else:
                        future.set_result(data.get("result", {}))
                continue
            self._event(data.get("method", ""), data.get("params", {}))

    def _event(self, method: str, params: dict[str, Any]) -> None:
        r = self.result
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            r.console.append((params.get("type", ""), text))
        elif method == "Runtime.exceptionThrown":
            r.exceptions.append(json.dumps(params.get("exceptionDetails", {}))[:500])
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            r.log.append((entry.get("level", ""), entry.get("source", ""), entry.get("text", "")))
        elif method == "Network.requestWillBeSent":
            r.requests.append(params.get("request", {}).get("url", ""))
        elif method == "Network.loadingFailed":
            r.failed.append(params.get("errorText", ""))
        future = self.waiting.pop(method, None)
        if future is not None and not future.done():
            future.set_result(None)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM chromium's process group, SIGKILL what is left after 5 s, reap the leader."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _group_alive(process.pid):
        time.sleep(0.05)
    if _group_alive(process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    if process.poll() is None:
        process.wait(timeout=5)


def _group_alive(pgid: int) -> bool:
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.Error, OSError):
            continue
    return False
