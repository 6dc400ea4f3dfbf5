"""How a run runs (concurrency, timeouts, saving): apart from the runner, so start-up can build one cheaply."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class RunOptions:
    concurrency: int = 8
    # Seconds one agent turn may take before the case fails with a timeout.
    turn_timeout: float = 120.0
    judge_concurrency: int = 8
    judge_base_url: str | None = None
    judge_cache: bool = True
    save: bool = True
    # Seconds one judge call may take (None: the judge service's default).
    judge_timeout: float | None = None
    # A case with any metric not evaluated fails (ADK's rule, the default, lets it pass).
    strict: bool = False
    # Record the agent's code state (git commit, dirty diff, file hashes) at run start.
    code_state: bool = True
