"""Token usage per (agent|judge, model) and per turn/case/run, and its estimated cost from a price table.

Token counts are `schema.usage.TokenUsage`s. Cost = (prompt - cached) * prompt price + cached * cached
price + output * output price, prices in USD per million tokens.

Price overrides are JSON of this shape, per model (missing `cached_prompt` means the prompt price):
    {"prices": {"gemini-2.5-flash": {"prompt": 0.30, "output": 2.50, "cached_prompt": 0.03}}}
read from the file named by $TUI_EVAL_PRICES, then from the `prices` section of a config file
(the config wins: it is the more specific). Each override replaces that model's whole entry.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer, field_validator

from ..schema.usage import SHORT_KEYS, TokenUsage

log = logging.getLogger(__name__)

PRICES_ENV = "TUI_EVAL_PRICES"
Who = Literal["agent", "judge"]


class UsageKey(NamedTuple):
    who: Who
    model: str


class UsageEntry(BaseModel):
    """One model call's usage (or a turn's, already summed), with where it happened."""

    model_config = ConfigDict(frozen=True)

    who: Who
    model: str
    usage: TokenUsage
    case_id: str | None = None
    repetition: int = 1
    turn: int | None = None  # 0-based invocation index; None for case-level calls


@dataclass(slots=True)
class UsageBook:
    """Collects usage entries and answers the aggregates (per model, turn, case, run; agent vs judge)."""

    entries: list[UsageEntry] = field(default_factory=list)

    def add(self, who: Who, model: str, usage: TokenUsage, *, case_id: str | None = None,
            repetition: int = 1, turn: int | None = None) -> None:
        self.entries.append(UsageEntry(who=who, model=model, usage=usage, case_id=case_id,
                                       repetition=repetition, turn=turn))

    def extend(self, entries: Iterable[UsageEntry]) -> None:
        self.entries.extend(entries)

    def _select(self, who: Who | None, case_id: str | None, repetition: int | None,
                turn: int | None) -> Iterable[UsageEntry]:
        for e in self.entries:
            if who is not None and e.who != who:
                continue
            if case_id is not None and e.case_id != case_id:
                continue
            if repetition is not None and e.repetition != repetition:
                continue
            if turn is not None and e.turn != turn:
                continue
            yield e

    def by_model(self, *, who: Who | None = None, case_id: str | None = None,
                 repetition: int | None = None, turn: int | None = None) -> dict[UsageKey, TokenUsage]:
        """Usage per (who, model), optionally narrowed to one case / repetition / turn."""
        out: dict[UsageKey, TokenUsage] = {}
        for e in self._select(who, case_id, repetition, turn):
            key = UsageKey(e.who, e.model)
            out[key] = out.get(key, TokenUsage()) + e.usage
        return out

    def total(self, *, who: Who | None = None, case_id: str | None = None, repetition: int | None = None,
              turn: int | None = None) -> TokenUsage:
        return TokenUsage.total(e.usage for e in self._select(who, case_id, repetition, turn))

    def by_case(self, *, who: Who | None = None, repetition: int | None = None) -> dict[str, TokenUsage]:
        """Usage per case id (entries without a case are left out)."""
        out: dict[str, TokenUsage] = {}
        for e in self._select(who, None, repetition, None):
            if e.case_id is not None:
                out[e.case_id] = out.get(e.case_id, TokenUsage()) + e.usage
        return out

    def by_turn(self, case_id: str, *, who: Who | None = None, repetition: int = 1) -> dict[int, TokenUsage]:
        """Usage per turn index of one case's repetition (case-level calls are left out)."""
        out: dict[int, TokenUsage] = {}
        for e in self._select(who, case_id, repetition, None):
            if e.turn is not None:
                out[e.turn] = out.get(e.turn, TokenUsage()) + e.usage
        return dict(sorted(out.items()))

    def by_repetition(self, *, who: Who | None = None) -> dict[int, TokenUsage]:
        """Usage per run (repetition number) of an `--num-runs N` run."""
        out: dict[int, TokenUsage] = {}
        for e in self._select(who, None, None, None):
            out[e.repetition] = out.get(e.repetition, TokenUsage()) + e.usage
        return dict(sorted(out.items()))


class ModelPrice(BaseModel):
    """USD per million tokens; `cached_prompt` None means cached prompt tokens cost the prompt price."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_prompt: float | None = Field(default=None, ge=0)

    def cost(self, usage: TokenUsage) -> float:
        cached = min(usage.cached_tokens, usage.prompt_tokens)
        cached_price = self.prompt if self.cached_prompt is None else self.cached_prompt
        return ((usage.prompt_tokens - cached) * self.prompt + cached * cached_price
                + usage.output_tokens * self.output) / 1e6


# Estimate, override in config: Google's published paid-tier list prices for prompts up to 200k tokens
# (longer prompts cost more on the pro models, which this table does not model), as best known
# when written; preview-model prices may change.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gemini-2.5-pro": ModelPrice(prompt=1.25, output=10.00, cached_prompt=0.125),
    "gemini-2.5-flash": ModelPrice(prompt=0.30, output=2.50, cached_prompt=0.03),
    "gemini-2.5-flash-lite": ModelPrice(prompt=0.10, output=0.40, cached_prompt=0.01),
    "gemini-3-pro-preview": ModelPrice(prompt=2.00, output=12.00, cached_prompt=0.20),
    "gemini-3-flash-preview": ModelPrice(prompt=0.50, output=3.00, cached_prompt=0.05),
    # GA and point-release names resolve through the `-` prefix rule (gemini-3.1-pro-preview -> gemini-3.1-pro)
    "gemini-3-flash": ModelPrice(prompt=0.50, output=3.00, cached_prompt=0.05),
    "gemini-3.1-pro": ModelPrice(prompt=2.00, output=12.00, cached_prompt=0.20),
    "gemini-2.0-flash": ModelPrice(prompt=0.10, output=0.40, cached_prompt=0.025),
}
DEFAULT_SOURCE = "built-in (estimate, override in config)"


class PriceFileError(ValueError):
    """A price override file that cannot be used, with the file and the reason."""


class PriceTable(BaseModel):
    """Model name -> price, and where the prices came from (shown beside every cost)."""

    model_config = ConfigDict(frozen=True)

    prices: dict[str, ModelPrice]
    sources: tuple[str, ...] = (DEFAULT_SOURCE,)

    def lookup(self, model: str) -> ModelPrice | None:
        """Exact name, else without a `models/` prefix, else the longest listed name that the model
        extends at a `-` (`gemini-2.5-flash-001` -> `gemini-2.5-flash`); None when unknown."""
        name = model.removeprefix("models/")
        if name in self.prices:
            return self.prices[name]
        best = max((k for k in self.prices if name.startswith(k + "-")), key=len, default=None)
        return self.prices[best] if best is not None else None

    def merged(self, overrides: Mapping[str, ModelPrice], source: str) -> PriceTable:
        return PriceTable(prices={**self.prices, **overrides}, sources=(*self.sources, source))


class _PriceFile(BaseModel):
    model_config = ConfigDict(extra="ignore")  # a config file has other sections

    prices: dict[str, ModelPrice] = {}


def parse_prices(data: object, source: str) -> dict[str, ModelPrice]:
    """The `prices` section of a parsed JSON document (absent -> {}); PriceFileError when malformed."""
    if not isinstance(data, dict):
        raise PriceFileError(f"{source}: expected a JSON object with a 'prices' section")
    try:
        return _PriceFile.model_validate(data).prices
    except ValidationError as exc:
        raise PriceFileError(f"{source}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from exc


#: A price file is a few hundred bytes; anything past this is not one (and is never read whole).
MAX_PRICE_FILE_BYTES = 4 * 1024 * 1024


def _read_prices(path: Path) -> dict[str, ModelPrice]:
    """A price file's `prices`: a regular UTF-8 JSON file of bounded size (never a FIFO or /dev/zero)."""
    from ..schema.errors import LoadError
    from ..schema.load import decode_json_text, read_regular_file

    try:
        data = json.loads(decode_json_text(read_regular_file(path, MAX_PRICE_FILE_BYTES)))
    except LoadError as exc:
        raise PriceFileError(f"{path}: {exc.message}") from None
    except (ValueError, RecursionError) as exc:  # invalid JSON, or text that is not UTF-8
        raise PriceFileError(f"{path}: {exc}") from None
    return parse_prices(data, str(path))


def load_price_table(config_file: Path | None = None, env: Mapping[str, str] | None = None) -> PriceTable:
    """Defaults, then the $TUI_EVAL_PRICES file, then the config file's `prices` section."""
    env = os.environ if env is None else env
    table = PriceTable(prices=dict(DEFAULT_PRICES))
    env_file = env.get(PRICES_ENV)
    if env_file:
        table = table.merged(_read_prices(Path(env_file)), f"${PRICES_ENV} ({env_file})")
    if config_file is not None:
        overrides = _read_prices(config_file)
        if overrides:
            table = table.merged(overrides, str(config_file))
    return table


class CostLine(BaseModel):
    """One (who, model): its usage and estimated cost, None (never 0) when the model has no price."""

    model_config = ConfigDict(frozen=True)

    who: Who
    model: str
    usage: TokenUsage
    cost_usd: float | None

    # Run records have always spelt a cost line's usage with the short keys.
    @field_validator("usage", mode="before")
    @classmethod
    def _read_short_keys(cls, value: object) -> object:
        if isinstance(value, dict):
            return {SHORT_KEYS.get(key, key): count for key, count in value.items()}
        return value

    @field_serializer("usage")
    def _write_short_keys(self, usage: TokenUsage) -> dict[str, int]:
        return usage.short_keys()


class CostEstimate(BaseModel):
    """Estimated cost of a run: always an estimate (list prices, no tiers, no free quota)."""

    model_config = ConfigDict(frozen=True)

    lines: tuple[CostLine, ...]
    sources: tuple[str, ...]
    estimate: Literal[True] = True

    @property
    def known_usd(self) -> float:
        """Sum over the models with a price (see `unknown_models` for what it leaves out)."""
        return sum(line.cost_usd for line in self.lines if line.cost_usd is not None)

    @property
    def unknown_models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(line.model for line in self.lines if line.cost_usd is None))

    @property
    def total_usd(self) -> float | None:
        """The whole cost, None when any model used has no price (a partial sum would mislead)."""
        return None if self.unknown_models else self.known_usd

    def for_who(self, who: Who) -> float | None:
        mine = [line for line in self.lines if line.who == who]
        if any(line.cost_usd is None for line in mine):
            return None
        return sum(line.cost_usd for line in mine if line.cost_usd is not None)

    def text(self) -> str:
        """One line for a summary, e.g. `est. cost $0.0123 (estimate; no price for: m)`."""
        amount = f"${self.known_usd:.4f}"
        if self.unknown_models:
            return f"est. cost ≥ {amount} (estimate; no price for: {', '.join(self.unknown_models)})"
        return f"est. cost {amount} (estimate)"


def estimate_cost(usage_by_model: Mapping[UsageKey, TokenUsage], table: PriceTable | None = None) -> CostEstimate:
    """Price each (who, model)'s usage; unknown models get cost None and are named."""
    table = table if table is not None else PriceTable(prices=dict(DEFAULT_PRICES))
    lines: list[CostLine] = []
    for key in sorted(usage_by_model):
        price = table.lookup(key.model)
        usage = usage_by_model[key]
        if price is None:
            log.info("no price for model %s: its cost is unknown", key.model)
        lines.append(CostLine(who=key.who, model=key.model, usage=usage,
                              cost_usd=price.cost(usage) if price is not None else None))
    return CostEstimate(lines=tuple(lines), sources=table.sources)
