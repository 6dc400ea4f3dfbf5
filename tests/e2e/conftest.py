"""End-to-end fixtures: the session's Ray head, started in the background when the first e2e test runs if
any collected test needs it, and joined by the executor tests."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from tests.support.ray_head import RayHead


def _needs_ray(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    on_ray = callspec is not None and callspec.params.get("executor") == "ray"
    return on_ray or "ray_cluster" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The Ray tests run on one pytest-xdist worker (`--dist loadgroup`): one Ray head serves them all."""
    for item in items:
        if _needs_ray(item):
            item.add_marker(pytest.mark.xdist_group("ray"))


class _Heads:
    """The session's Ray head, once started."""

    head: RayHead | None = None


@pytest.fixture(scope="session", autouse=True)
def _ray_head(request: pytest.FixtureRequest) -> Iterator[_Heads]:
    """In one process, the Ray head starts now (before the Ray tests need it) when the session will run any
    Ray test. With pytest-xdist every worker collects every test, so it starts when the worker given the
    Ray tests first needs it (`ray_cluster`)."""
    heads = _Heads()
    if "PYTEST_XDIST_WORKER" not in os.environ and any(_needs_ray(item) for item in request.session.items):
        heads.head = RayHead()
    try:
        yield heads
    finally:
        if heads.head is not None:
            heads.head.stop()


@pytest.fixture(scope="session")
def ray_cluster(_ray_head: _Heads) -> tuple[str, str]:
    """A Ray head on 127.0.0.1 for the whole session: (its GCS address, its Ray Client address)."""
    if _ray_head.head is None:
        _ray_head.head = RayHead()
    return _ray_head.head.wait()
