"""What is checked before the first case starts (exit 2, one clear line each): a judge model whose API
rejects the credentials or does not know the model, asked with a metadata call (`JudgeService.probe`),
never a generation. Absent credentials are not checked here: the run reports those metrics NOT_EVALUATED
with the reason, as the offline demo needs; what goes wrong during the run stays exit 3."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.config import EvalConfig
    from .options import RunOptions

#: Seconds the probes of one run may take in all: a probe that cannot tell in time says nothing.
PROBE_SECONDS = 10.0


def judge_models(configs: Sequence[EvalConfig]) -> list[str]:
    """The judge_model of every judged criterion of these configs, each once."""
    from ..metrics.custom import spec_for

    models: dict[str, None] = {}
    for config in configs:
        for name, crit in config.criteria.items():
            spec = spec_for(name, config)
            if spec is not None and (spec.needs_judge or crit.judge_requested):
                models[crit.judge.judge_model] = None
    return list(models)


async def probe_judges(configs: Sequence[EvalConfig], options: RunOptions) -> list[str]:
    """One line per judge model that cannot judge (rejected credentials, no such model); [] otherwise."""
    models = judge_models(configs)
    if not models:
        return []
    from ..judge import create_judge_service
    from .runner import judge_options

    service = create_judge_service(judge_options(options))
    try:
        found = await asyncio.wait_for(asyncio.gather(*(service.probe(m) for m in models)), PROBE_SECONDS)
    except asyncio.TimeoutError:
        return []
    finally:
        await service.aclose()
    return [f"judge_model {m}: {why}" for m, why in zip(models, found) if why is not None]
