"""End-to-end fixtures: the session's Ray head, started in the background when the first e2e test runs if
any collected test needs it, and joined by the executor tests."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.support.ray_head import RayHead


def _needs_ray(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    on_ray = callspec is not None and callspec.params.get("executor") == "ray"
    return on_ray or "ray_cluster" in getattr(item, "fixturenames", ())


@pytest.fixture(scope="session", autouse=True)
def _ray_head(request: pytest.FixtureRequest) -> Iterator[RayHead | None]:
    """The Ray head, started now (before the Ray tests need it) when the session will run any Ray test."""
    if not any(_needs_ray(item) for item in request.session.items):
        yield None
        return
    head = RayHead()
    try:
        yield head
    finally:
        head.stop()


@pytest.fixture(scope="session")
def ray_cluster(_ray_head: RayHead | None) -> tuple[str, str]:
    """A Ray head on 127.0.0.1 for the whole session: (its GCS address, its Ray Client address)."""
    assert _ray_head is not None, "a test that uses Ray was not seen when the session was collected"
    return _ray_head.wait()
