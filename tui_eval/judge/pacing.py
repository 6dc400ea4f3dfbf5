"""How every LLM client of tui-eval paces its calls: one retry policy and one adaptive concurrency limit.

The judge service (Gemini, OpenAI-compatible servers, the user simulator) and the Vertex AI evaluation
client all retry with `RetryPolicy` (the SDKs' own retries are off) and bound their calls in flight with an
`AdaptiveLimit`: it starts wide, halves when the endpoint says it is overloaded (429 / RESOURCE_EXHAUSTED, or
any answer with Retry-After), holds every new call until a Retry-After has passed, and grows back by one slot
per window of successful calls until it is wide again. What a failed call *means* (retryable, throttled) is
each client's to say; how long to wait and how many calls to keep in flight is decided here only.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries after the first attempt and the wait before each one."""

    # Retries after the first attempt (on 408/429/5xx, timeouts and transport errors).
    max_retries: int = 4
    # Backoff before retry n (0-based) is backoff_base * 2**n, capped at backoff_max, with equal jitter.
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    # A server's Retry-After is honoured as it is, up to this many seconds.
    retry_after_max: float = 60.0

    def delay(self, retries: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retries` (0-based): the server's Retry-After when it gave
        one (capped), else exponential backoff with jitter (concurrent calls must not retry in lockstep)."""
        if retry_after is not None:
            return max(0.0, min(retry_after, self.retry_after_max))
        backoff = min(self.backoff_max, self.backoff_base * (2 ** retries))
        return float(backoff * (0.5 + random.random() / 2))


class AdaptiveLimit:
    """At most `limit` calls in flight, `limit` moving between 1 and `ceiling` (additive increase,
    multiplicative decrease). Made for one event loop: a client moving to another makes a new one."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = max(1, int(ceiling))
        self.limit = self.ceiling  # start wide
        self.in_flight = 0
        # Times the limit was lowered because the endpoint pushed back.
        self.throttles = 0
        self._successes = 0
        # Bumped on every decrease: a burst of 429s from calls sent under one limit halves it once.
        self._epoch = 0
        self._resume_at = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> int:
        """Wait for a slot (and for any Retry-After pause to end); returns the epoch to hand back."""
        while True:
            pause = self._resume_at - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)
                continue
            if self.in_flight < self.limit and not self._waiters:
                self.in_flight += 1
                return self._epoch
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._wake()  # the slot it was woken for goes to the next waiter
                raise
            if self.in_flight < self.limit and time.monotonic() >= self._resume_at:
                self.in_flight += 1
                return self._epoch

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def succeeded(self) -> None:
        """A call was answered: after `limit` answers in a row the limit grows by one, up to the ceiling."""
        if self.limit >= self.ceiling:
            return
        self._successes += 1
        if self._successes >= self.limit:
            self._successes = 0
            self.limit += 1
            self._wake()

    def throttled(self, epoch: int, retry_after: float | None) -> None:
        """The endpoint pushed back on a call started in `epoch`: halve the limit (once per epoch) and hold
        new calls until its Retry-After has passed."""
        if retry_after is not None and retry_after > 0:
            self._resume_at = max(self._resume_at, time.monotonic() + retry_after)
        if epoch == self._epoch:
            self._epoch += 1
            self._successes = 0
            self.limit = max(1, self.limit // 2)
            self.throttles += 1

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1
