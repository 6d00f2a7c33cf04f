"""The HTTP face of the simulator: vLLM's OpenAI-compatible routes on aiohttp.

``/health``, ``/v1/models``, ``/version``, ``/metrics``, ``/v1/completions``,
``/v1/chat/completions`` and the simulator's own ``/sim/config``. Handlers only translate:
validation and chunk shapes live in :mod:`tuner.sim.openai_api`, timing in
:mod:`tuner.sim.engine`. This module imports aiohttp (slow to import), so startup loads it in
a thread while the "model" loads.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from tuner.sim import metrics
from tuner.sim.engine import Engine, Seq
from tuner.sim.log import Log
from tuner.sim.openai_api import (
    ApiError,
    GenRequest,
    Kind,
    StreamWriter,
    full_response,
    parse_request,
    reasoning_tokens_for,
)
from tuner.sim.profiles import Profile
from tuner.sim.settings import SIM_VERSION

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class SimApp:
    """Route handlers bound to one engine."""

    def __init__(
        self,
        *,
        engine: Engine,
        profile: Profile,
        served_names: list[str],
        root: str,
        max_model_len: int,
        config: dict[str, Any],
        log: Log,
        access_log: bool = True,
        api_key: str | None = None,
        metrics: bool = True,
    ) -> None:
        self.engine = engine
        self.profile = profile
        self.served_names = served_names
        self.root = root
        self.max_model_len = max_model_len
        self.config = config
        self.log = log
        self.access_log = access_log
        self.api_key = api_key
        self.serves_metrics = metrics

    def build(self) -> web.Application:
        middlewares = [self._access_log] if self.access_log else []
        if self.api_key is not None:
            middlewares.append(self._authenticate)
        app = web.Application(middlewares=middlewares, client_max_size=64 * 2**20)
        app.router.add_get("/health", self.health)
        app.router.add_get("/ping", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/version", self.version)
        if self.serves_metrics:
            app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/sim/config", self.sim_config)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.chat)
        return app

    @web.middleware
    async def _access_log(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        finally:
            peer = request.transport.get_extra_info("peername") if request.transport else None
            addr = f"{peer[0]}:{peer[1]}" if peer else "-"
            self.log.line(
                f'INFO:     {addr} - "{request.method} {request.path_qs} HTTP/'
                f'{request.version.major}.{request.version.minor}" {status} '
                f"{_REASONS.get(status, '')}"
            )

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        # As vLLM's --api-key: the /v1 routes need the key; /health, /metrics do not.
        if request.path.startswith("/v1") and not hmac.compare_digest(
            request.headers.get("Authorization", ""), f"Bearer {self.api_key}"
        ):
            return web.json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    # -- simple routes ------------------------------------------------------------------------
    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": SIM_VERSION})

    async def models(self, request: web.Request) -> web.Response:
        created = int(self.config.get("started_at", 0))
        data = [
            {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "vllm",
                "root": self.root,
                "parent": None,
                "max_model_len": self.max_model_len,
            }
            for name in self.served_names
        ]
        return web.json_response({"object": "list", "data": data})

    async def metrics(self, request: web.Request) -> web.Response:
        text = metrics.render(self.engine, self.served_names[0])
        return web.Response(body=text.encode(), headers={"Content-Type": metrics.CONTENT_TYPE})

    async def sim_config(self, request: web.Request) -> web.Response:
        return web.json_response(self.config)

    # -- generation ---------------------------------------------------------------------------
    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, "completion")

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, "chat")

    async def _generate(self, request: web.Request, kind: Kind) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
        except ValueError as exc:
            return _error(ApiError(400, f"JSON decode error: {exc}"))
        try:
            req = parse_request(kind, body, self.served_names, self.max_model_len)
        except ApiError as exc:
            return _error(exc)
        seq = self.engine.add(
            req.prompt_tokens, req.max_tokens, prompt_key=req.prompt_key, stop_at=req.stop_at()
        )
        reasoning = (
            reasoning_tokens_for(seq.target, self.profile.reasoning_share) if kind == "chat" else 0
        )
        try:
            if req.stream:
                return await self._stream(request, req, seq, reasoning)
            while not seq.finished:
                await seq.wait_for_tokens(seq.target - 1)  # wakes when finished or aborted
            if seq.state == "aborted":
                return _error(ApiError(503, "The server is shutting down."))
            return web.json_response(
                full_response(req, seq.generated, seq.finish_reason or "length", reasoning)
            )
        finally:
            if not seq.finished:
                self.engine.abort(seq)

    async def _stream(
        self, request: web.Request, req: GenRequest, seq: Seq, reasoning: int
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            }
        )
        await resp.prepare(request)
        writer = StreamWriter(req, reasoning)
        sent = 0
        try:
            while True:
                await seq.wait_for_tokens(sent)
                if seq.state == "aborted":
                    break  # shutting down: end the stream without [DONE], as a dying server would
                n = seq.generated
                done = seq.state == "finished"
                if n > sent:
                    data = writer.tokens(sent, n, seq.finish_reason if done else None)
                    sent = n
                    if done:
                        if req.include_usage:
                            data += writer.usage(n)
                        data += writer.DONE
                    await resp.write(data)
                if done:
                    break
        except ConnectionError:
            self.engine.abort(seq)  # the client went away; free its slot
        return resp


def _error(exc: ApiError) -> web.Response:
    return web.json_response(exc.body(), status=exc.status)


async def start_http(app: web.Application, sock: socket.socket) -> web.AppRunner:
    """Start serving on an already-bound socket (listening starts here)."""
    runner = web.AppRunner(
        app,
        access_log=None,
        handle_signals=False,
        shutdown_timeout=0.1,
        handler_cancellation=True,  # a client that disconnects cancels its handler
    )
    await runner.setup()
    site = web.SockSite(runner, sock, backlog=1024)
    await site.start()
    return runner


async def stop_http(runner: web.AppRunner, timeout: float = 0.3) -> None:
    """Stop serving; give up on stragglers after ``timeout`` seconds."""
    with contextlib.suppress(Exception):  # shutting down regardless
        await asyncio.wait_for(runner.cleanup(), timeout)
