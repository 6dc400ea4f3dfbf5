"""A bound on the decoded size of every HTTP answer (judge, Vertex AI, CES): the one place it is kept.

httpx (and its fork httpx2, which the MCP SDK uses) inflate a gzip body as it is read, without limit: a
judge endpoint answering a few MB of gzip once drove one call to gigabytes of memory (bench/answer_bound.py
measures the bound). `with_answer_bound` adds two event hooks to a client's: one asks for the encodings
bounded here (gzip, deflate), the other replaces each answer's byte stream with one that inflates chunk
by chunk and stops at `MAX_ANSWER_BYTES`, raising `AnswerTooLarge`, which the caller reports as that
call's error. Hooks rather than a transport,
so a proxy from the environment (a transport of its own) is bounded too.
"""

from __future__ import annotations

import functools
import importlib
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

#: The largest answer, decoded, any one HTTP call may bring: far above a judge verdict (a few KB) or a
#: page of CES evaluations, far below what would hurt a machine.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
_ACCEPTED = "gzip, deflate"
_PIECE = 1 << 16

Hook = Callable[[Any], Awaitable[None]]


class AnswerTooLarge(Exception):
    """An HTTP answer larger than the bound once decoded (or in an encoding that cannot be bounded)."""


@functools.cache
def _for_module(package: str) -> tuple[type[Any], type[AnswerTooLarge]]:
    """The bounded stream class and the error class for httpx or httpx2 (whichever made the response).
    The error is also that package's StreamError, which the MCP SDK turns into the request's error."""
    mod = importlib.import_module(package)

    too_large = type("AnswerTooLarge", (AnswerTooLarge, mod.StreamError), {"__module__": __name__})

    class BoundedStream(mod.AsyncByteStream):  # type: ignore[name-defined]
        def __init__(self, raw: Any, encoding: str, limit: int, url: str) -> None:
            self._raw = raw
            self._encoding = encoding
            self._limit = limit
            self._url = url

        def _too_large(self) -> AnswerTooLarge:
            size = f"{self._limit >> 20} MB" if self._limit >= 1 << 20 else f"{self._limit:,} bytes"
            error: AnswerTooLarge = too_large(f"the answer from {self._url} is larger than {size} once decoded; "
                                              "not read further")
            return error

        async def __aiter__(self) -> AsyncIterator[bytes]:
            if self._encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
                raise too_large(f"the answer from {self._url} uses the content encoding {self._encoding!r}, "
                                "which cannot be read within a size bound")
            inflate = None
            if self._encoding in ("gzip", "x-gzip"):
                inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            elif self._encoding == "deflate":
                inflate = zlib.decompressobj()
            total = 0
            first = True
            async for chunk in self._raw:
                if inflate is None:
                    total += len(chunk)
                    if total > self._limit:
                        raise self._too_large()
                    yield chunk
                    continue
                data = chunk
                while data:
                    try:
                        piece = inflate.decompress(data, _PIECE)
                    except zlib.error as exc:
                        if first and self._encoding == "deflate":  # raw deflate, without the zlib header
                            inflate, first = zlib.decompressobj(-zlib.MAX_WBITS), False
                            continue
                        raise mod.DecodingError(f"the answer from {self._url} is not valid "
                                                f"{self._encoding}: {exc}") from None
                    data = inflate.unconsumed_tail
                    first = False
                    total += len(piece)
                    if total > self._limit:
                        raise self._too_large()
                    if piece:
                        yield piece
            if inflate is not None:
                rest = inflate.flush(max(1, self._limit - total + 1))
                if total + len(rest) > self._limit:
                    raise self._too_large()
                if rest:
                    yield rest

        async def aclose(self) -> None:
            await self._raw.aclose()

    return BoundedStream, too_large


def _hooks(limit: int) -> tuple[Hook, Hook]:
    async def ask_for_bounded_encodings(request: Any) -> None:
        request.headers["Accept-Encoding"] = _ACCEPTED

    async def bound_the_answer(response: Any) -> None:
        stream_class, _error = _for_module(type(response).__module__.split(".")[0])
        encoding = response.headers.get("content-encoding", "").strip().lower()
        # The stream now yields decoded bytes: the client must not decode them again.
        response.headers.pop("content-encoding", None)
        response.stream = stream_class(response.stream, encoding, limit, str(response.request.url))

    return ask_for_bounded_encodings, bound_the_answer


def with_answer_bound(event_hooks: Mapping[str, Sequence[Hook]] | None = None,
                      limit: int = MAX_ANSWER_BYTES) -> dict[str, list[Hook]]:
    """`event_hooks` for an httpx or httpx2 client, with the answer-size bound first: every answer the
    client reads (`aread`, `json()`, streamed) stops at `limit` decoded bytes with AnswerTooLarge."""
    request_hook, response_hook = _hooks(limit)
    hooks = {key: list(value) for key, value in (event_hooks or {}).items()}
    hooks["request"] = [request_hook, *hooks.get("request", [])]
    hooks["response"] = [response_hook, *hooks.get("response", [])]
    return hooks
