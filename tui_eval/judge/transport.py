"""The HTTP client every LLM client of tui-eval sends through: the judge (Gemini and OpenAI-compatible), the
user simulator (it asks through the judge) and the Vertex AI evaluation client.

Each gets an `httpx.AsyncClient` made here and handed to its SDK, so the SDK never picks a transport of its
own: google-genai would otherwise send async calls through aiohttp whenever aiohttp is importable (textual-dev
brings it), where the httpx event hooks that bound an answer's decoded size (`answer_size.py`) never run.
On this client:

- every answer stops at `MAX_ANSWER_BYTES` decoded (`AnswerTooLarge`, that call's error);
- a redirect is followed only within the configured endpoint's origin (scheme, host and port): one to
  another origin is `RedirectRefused`, that call's error, and the prompt is never sent there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .answer_size import with_answer_bound

if TYPE_CHECKING:  # pragma: no cover
    import httpx

_DEFAULT_PORTS = {"http": 80, "https": 443}


class RedirectRefused(Exception):
    """An endpoint redirected a call to another origin; the call is not sent there."""


def _origin(url: httpx.URL) -> str:
    scheme = url.scheme.lower()
    port = url.port or _DEFAULT_PORTS.get(scheme)
    return f"{scheme}://{url.host.lower()}:{port}"


async def refuse_redirects_to_another_origin(response: httpx.Response) -> None:
    """A response hook: a redirect whose target is not the request's origin raises RedirectRefused."""
    if not response.has_redirect_location:
        return
    here = response.request.url
    there = here.join(response.headers["location"])
    if _origin(there) != _origin(here):
        raise RedirectRefused(
            f"the endpoint {_origin(here)} answered {response.status_code} redirecting to {_origin(there)}: "
            "LLM calls follow no redirect to another origin (fix the endpoint URL)")


def llm_hooks() -> dict[str, list[Any]]:
    """The event hooks every LLM client's httpx client carries (the answer bound, the redirect rule)."""
    return with_answer_bound({"response": [refuse_redirects_to_another_origin]})


#: Connections per pool of the sharded transport: httpcore finds a connection for each request by scanning
#: its whole pool, and checks every connection's idleness once per connection (quadratic): with 64 calls in
#: flight in one pool that scan cost more CPU than the calls themselves (bench/judge_throughput.py --whole).
_SHARD = 8


def llm_http_client(*, timeout: float | None, width: int = 64) -> httpx.AsyncClient:
    """A new async httpx client with the hooks above, following same-origin redirects only, its connections
    in small pools for `width` calls in flight."""
    import httpx

    return httpx.AsyncClient(timeout=timeout, follow_redirects=True, event_hooks=llm_hooks(),
                             transport=_sharded_transport(max(1, -(-width // _SHARD))))


def _sharded_transport(shards: int) -> httpx.AsyncBaseTransport:
    import httpx

    class ShardedTransport(httpx.AsyncBaseTransport):
        """Sends each request through the least busy of several connection pools (one TLS context)."""

        def __init__(self) -> None:
            context = httpx.create_ssl_context()  # loading the CA bundle once, not once per pool
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=_SHARD)
            self._pools = [httpx.AsyncHTTPTransport(verify=context, limits=limits) for _ in range(shards)]
            self._busy = [0] * shards

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            index = min(range(len(self._pools)), key=self._busy.__getitem__)
            self._busy[index] += 1
            try:
                return await self._pools[index].handle_async_request(request)
            finally:
                self._busy[index] -= 1

        async def aclose(self) -> None:
            for pool in self._pools:
                await pool.aclose()

    return ShardedTransport()


def refused_or_too_large(exc: BaseException) -> BaseException | None:
    """The AnswerTooLarge or RedirectRefused behind `exc` (an SDK may wrap it), or None."""
    from .answer_size import AnswerTooLarge

    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return None
        if isinstance(seen, (AnswerTooLarge, RedirectRefused)):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
