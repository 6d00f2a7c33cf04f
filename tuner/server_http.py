"""How tuner talks HTTP to the server it tunes: one setup for every request it makes.

Model discovery, ``/metrics``, ``/version``, the launcher's health checks (httpx) and
the benchmark's own request heads (tuner/bench/http.py) all go through here, so they
agree on three things:

- No proxy, ever: the operator's ``HTTP(S)_PROXY`` is for the outside world, and the
  server tuner launched (usually on 127.0.0.1) must be reached directly, as the
  benchmark's raw sockets reach it. ``trust_env=False`` also keeps ``.netrc`` out.
- The bearer key of ``OPENAI_API_KEY``, when set, on every request: a server started
  with ``--api-key`` lists its models to tuner as it answers the benchmark.
- TLS trusts what the benchmark's ``ssl.create_default_context()`` trusts (the system
  store), and an IPv6 host is written in brackets in URLs and ``Host`` headers.
"""

from __future__ import annotations

import functools
import os
import ssl

import httpx

API_KEY_ENV = "OPENAI_API_KEY"
"""The variable holding the server's API key, as OpenAI's clients and vLLM's bench read it."""

DEFAULT_TIMEOUT_S = 5.0


def auth_headers() -> dict[str, str]:
    """``{"Authorization": "Bearer KEY"}`` when ``OPENAI_API_KEY`` is set, else nothing."""
    key = os.environ.get(API_KEY_ENV)
    return {"Authorization": f"Bearer {key}"} if key else {}


def url_host(host: str) -> str:
    """The host as a URL or ``Host`` header writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def host_header(host: str, port: int) -> str:
    """The value of a request's ``Host`` header: ``127.0.0.1:8000``, ``[::1]:8000``."""
    return f"{url_host(host)}:{port}"


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The system trust store, loaded once: the same one the benchmark's sockets use."""
    return ssl.create_default_context()


def server_client(timeout: float | httpx.Timeout = DEFAULT_TIMEOUT_S) -> httpx.Client:
    """An httpx client for requests to the server (close it, or use it in ``with``)."""
    return httpx.Client(
        timeout=timeout, headers=auth_headers(), trust_env=False, verify=tls_context()
    )


def async_server_client(
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT_S,
) -> httpx.AsyncClient:
    """``server_client`` for code already in an event loop."""
    return httpx.AsyncClient(
        timeout=timeout, headers=auth_headers(), trust_env=False, verify=tls_context()
    )
