"""Token usage aggregates and the estimated cost from a (overridable) price table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui_eval.engine.pricing import (
    PRICES_ENV,
    ModelPrice,
    PriceFileError,
    PriceTable,
    TokenUsage,
    UsageBook,
    UsageKey,
    estimate_cost,
    load_price_table,
)


def test_usage_add_and_from_gemini() -> None:
    a = TokenUsage(prompt=10, output=5, cached=2, total=15)
    b = TokenUsage(prompt=1, output=2, cached=0, total=3)
    assert a + b == TokenUsage(prompt=11, output=7, cached=2, total=18)
    # Thoughts are billed as output; a missing total is prompt + output.
    u = TokenUsage.from_gemini(100, 20, cached_content_token_count=40, thoughts_token_count=7)
    assert u == TokenUsage(prompt=100, output=27, cached=40, total=127)
    assert TokenUsage.from_gemini(None, None) == TokenUsage()


def book() -> UsageBook:
    b = UsageBook()
    b.add("agent", "gemini-2.5-flash", TokenUsage(prompt=100, output=10, total=110), case_id="c1", turn=0)
    b.add("agent", "gemini-2.5-flash", TokenUsage(prompt=200, output=20, total=220), case_id="c1", turn=1)
    b.add("judge", "gemini-2.5-pro", TokenUsage(prompt=50, output=5, total=55), case_id="c1", turn=1)
    b.add("agent", "gemini-2.5-flash", TokenUsage(prompt=7, output=3, total=10), case_id="c2", turn=0,
          repetition=2)
    b.add("judge", "gemini-2.5-pro", TokenUsage(prompt=1, output=1, total=2), case_id=None)
    return b


def test_usage_book_aggregates() -> None:
    b = book()
    assert b.by_model() == {
        UsageKey("agent", "gemini-2.5-flash"): TokenUsage(prompt=307, output=33, total=340),
        UsageKey("judge", "gemini-2.5-pro"): TokenUsage(prompt=51, output=6, total=57),
    }
    assert b.total(who="agent") == TokenUsage(prompt=307, output=33, total=340)
    assert b.total(who="judge", case_id="c1") == TokenUsage(prompt=50, output=5, total=55)
    assert b.by_case() == {"c1": TokenUsage(prompt=350, output=35, total=385),
                           "c2": TokenUsage(prompt=7, output=3, total=10)}
    assert b.by_turn("c1") == {0: TokenUsage(prompt=100, output=10, total=110),
                               1: TokenUsage(prompt=250, output=25, total=275)}
    assert b.by_turn("c1", who="agent") == {0: TokenUsage(prompt=100, output=10, total=110),
                                            1: TokenUsage(prompt=200, output=20, total=220)}
    assert b.by_repetition() == {1: TokenUsage(prompt=351, output=36, total=387),
                                 2: TokenUsage(prompt=7, output=3, total=10)}
    assert b.by_model(repetition=2) == {UsageKey("agent", "gemini-2.5-flash"): TokenUsage(prompt=7, output=3,
                                                                                          total=10)}


def test_cost_by_hand() -> None:
    usage = {UsageKey("agent", "gemini-2.5-flash"): TokenUsage(prompt=1_000_000, output=200_000,
                                                               cached=400_000, total=1_200_000)}
    table = PriceTable(prices={"gemini-2.5-flash": ModelPrice(prompt=0.30, output=2.50, cached_prompt=0.03)})
    est = estimate_cost(usage, table)
    # 600k uncached * 0.30/M + 400k cached * 0.03/M + 200k output * 2.50/M = 0.18 + 0.012 + 0.5
    assert est.total_usd == pytest.approx(0.692)
    assert est.estimate is True
    assert est.text() == "est. cost $0.6920 (estimate)"
    # No cached price: cached prompt tokens cost the prompt price.
    plain = PriceTable(prices={"m": ModelPrice(prompt=1.0, output=2.0)})
    assert estimate_cost({UsageKey("judge", "m"): TokenUsage(prompt=10, output=5, cached=4)},
                         plain).total_usd == pytest.approx(20 / 1e6)


def test_unknown_model_is_none_never_zero() -> None:
    usage = {UsageKey("agent", "gemini-2.5-flash"): TokenUsage(prompt=1_000_000),
             UsageKey("judge", "my-local-llm"): TokenUsage(prompt=5, output=5)}
    est = estimate_cost(usage)
    by_model = {line.model: line.cost_usd for line in est.lines}
    assert by_model["my-local-llm"] is None
    assert by_model["gemini-2.5-flash"] == pytest.approx(0.30)
    assert est.unknown_models == ("my-local-llm",)
    assert est.total_usd is None
    assert est.known_usd == pytest.approx(0.30)
    assert est.for_who("agent") == pytest.approx(0.30) and est.for_who("judge") is None
    assert "no price for: my-local-llm" in est.text() and "estimate" in est.text()


def test_lookup_names() -> None:
    t = PriceTable(prices={"gemini-2.5-flash": ModelPrice(prompt=1, output=1),
                           "gemini-2.5-flash-lite": ModelPrice(prompt=2, output=2)})
    assert t.lookup("models/gemini-2.5-flash") == ModelPrice(prompt=1, output=1)
    assert t.lookup("gemini-2.5-flash-001") == ModelPrice(prompt=1, output=1)
    assert t.lookup("gemini-2.5-flash-lite-001") == ModelPrice(prompt=2, output=2)
    assert t.lookup("gemini-2.5-flashy") is None


def test_defaults_cover_the_gemini_family() -> None:
    t = load_price_table(env={})
    for model in ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite", "gemini-3-pro-preview",
                  "gemini-3-flash-preview", "gemini-3-flash", "gemini-3.1-pro-preview", "gemini-2.0-flash-001"]:
        assert t.lookup(model) is not None, model
    # a point release is priced as its own family, not as the shorter name it happens to extend
    assert t.lookup("gemini-3.1-pro-preview") == ModelPrice(prompt=2.00, output=12.00, cached_prompt=0.20)
    assert t.lookup("gemini-2.0-flash-001") == ModelPrice(prompt=0.10, output=0.40, cached_prompt=0.025)
    assert any("estimate" in s for s in t.sources)


def test_overrides_env_then_config(tmp_path: Path) -> None:
    env_file = tmp_path / "prices.json"
    env_file.write_text(json.dumps({"prices": {"gemini-2.5-flash": {"prompt": 9, "output": 9},
                                               "custom": {"prompt": 1, "output": 2, "cached_prompt": 0.5}}}))
    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": {"response_match_score": 0.8},
                                  "prices": {"custom": {"prompt": 3, "output": 4}}}))
    t = load_price_table(config, env={PRICES_ENV: str(env_file)})
    assert t.lookup("gemini-2.5-flash") == ModelPrice(prompt=9, output=9)
    assert t.lookup("custom") == ModelPrice(prompt=3, output=4)  # the config wins, whole entry
    assert t.lookup("gemini-2.5-pro") is not None  # defaults kept
    assert len(t.sources) == 3
    no_prices = tmp_path / "other.json"
    no_prices.write_text('{"criteria": {}}')
    assert load_price_table(no_prices, env={}).sources == load_price_table(env={}).sources


@pytest.mark.parametrize("content", ['{"prices": {"m": {"prompt": -1, "output": 1}}}',
                                     '{"prices": {"m": {"prompt": 1, "outptu": 1}}}', "[1]", "{not json"])
def test_bad_price_file_is_an_error_with_the_file(tmp_path: Path, content: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(PriceFileError, match="bad.json"):
        load_price_table(bad, env={})


def test_records_round_trip() -> None:
    est = estimate_cost(book().by_model())
    assert type(est).model_validate_json(est.model_dump_json()) == est
