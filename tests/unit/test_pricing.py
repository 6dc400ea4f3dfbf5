"""Token usage aggregates and the estimated cost from a (overridable) price table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui_eval.engine.pricing import (
    PRICES_ENV,
    CostEstimate,
    ModelPrice,
    PriceFileError,
    PriceTable,
    UsageBook,
    UsageKey,
    estimate_cost,
    load_price_table,
)
from tui_eval.schema.usage import TokenUsage


def test_usage_add_and_from_gemini() -> None:
    a = TokenUsage(prompt_tokens=10, output_tokens=5, cached_tokens=2, total_tokens=15)
    b = TokenUsage(prompt_tokens=1, output_tokens=2, cached_tokens=0, total_tokens=3)
    assert a + b == TokenUsage(prompt_tokens=11, output_tokens=7, cached_tokens=2, total_tokens=18)
    # Thoughts are billed as output; a missing total is prompt + output.
    u = TokenUsage.from_gemini(100, 20, cached_content_token_count=40, thoughts_token_count=7)
    assert u == TokenUsage(prompt_tokens=100, output_tokens=27, cached_tokens=40, total_tokens=127)
    assert TokenUsage.from_gemini(None, None) == TokenUsage()


def book() -> UsageBook:
    b = UsageBook()
    b.add("agent", "gemini-2.5-flash", TokenUsage(prompt_tokens=100, output_tokens=10, total_tokens=110),
          case_id="c1", turn=0)
    b.add("agent", "gemini-2.5-flash", TokenUsage(prompt_tokens=200, output_tokens=20, total_tokens=220),
          case_id="c1", turn=1)
    b.add("judge", "gemini-2.5-pro", TokenUsage(prompt_tokens=50, output_tokens=5, total_tokens=55),
          case_id="c1", turn=1)
    b.add("agent", "gemini-2.5-flash", TokenUsage(prompt_tokens=7, output_tokens=3, total_tokens=10),
          case_id="c2", turn=0, repetition=2)
    b.add("judge", "gemini-2.5-pro", TokenUsage(prompt_tokens=1, output_tokens=1, total_tokens=2), case_id=None)
    return b


def test_usage_book_aggregates() -> None:
    b = book()
    assert b.by_model() == {
        UsageKey("agent", "gemini-2.5-flash"): TokenUsage(prompt_tokens=307, output_tokens=33, total_tokens=340),
        UsageKey("judge", "gemini-2.5-pro"): TokenUsage(prompt_tokens=51, output_tokens=6, total_tokens=57),
    }
    assert b.total(who="agent") == TokenUsage(prompt_tokens=307, output_tokens=33, total_tokens=340)
    assert b.total(who="judge", case_id="c1") == TokenUsage(prompt_tokens=50, output_tokens=5, total_tokens=55)
    assert b.by_case() == {"c1": TokenUsage(prompt_tokens=350, output_tokens=35, total_tokens=385),
                           "c2": TokenUsage(prompt_tokens=7, output_tokens=3, total_tokens=10)}
    assert b.by_turn("c1") == {0: TokenUsage(prompt_tokens=100, output_tokens=10, total_tokens=110),
                               1: TokenUsage(prompt_tokens=250, output_tokens=25, total_tokens=275)}
    assert b.by_turn("c1", who="agent") == {0: TokenUsage(prompt_tokens=100, output_tokens=10, total_tokens=110),
                                            1: TokenUsage(prompt_tokens=200, output_tokens=20, total_tokens=220)}
    assert b.by_repetition() == {1: TokenUsage(prompt_tokens=351, output_tokens=36, total_tokens=387),
                                 2: TokenUsage(prompt_tokens=7, output_tokens=3, total_tokens=10)}
    assert b.by_model(repetition=2) == {
        UsageKey("agent", "gemini-2.5-flash"): TokenUsage(prompt_tokens=7, output_tokens=3, total_tokens=10)}


def test_cost_by_hand() -> None:
    usage = {UsageKey("agent", "gemini-2.5-flash"): TokenUsage(prompt_tokens=1_000_000, output_tokens=200_000,
                                                               cached_tokens=400_000, total_tokens=1_200_000)}
    table = PriceTable(prices={"gemini-2.5-flash": ModelPrice(prompt=0.30, output=2.50, cached_prompt=0.03)})
    est = estimate_cost(usage, table)
    # 600k uncached * 0.30/M + 400k cached * 0.03/M + 200k output * 2.50/M = 0.18 + 0.012 + 0.5
    assert est.total_usd == pytest.approx(0.692)
    assert est.estimate is True
    assert est.text() == "est. cost $0.6920 (estimate)"
    # No cached price: cached prompt tokens cost the prompt price.
    plain = PriceTable(prices={"m": ModelPrice(prompt=1.0, output=2.0)})
    assert estimate_cost({UsageKey("judge", "m"): TokenUsage(prompt_tokens=10, output_tokens=5, cached_tokens=4)},
                         plain).total_usd == pytest.approx(20 / 1e6)


def test_a_records_cost_lines_keep_their_short_usage_keys() -> None:
    # Run records written before TokenUsage was one class spell a cost line's usage prompt/output/cached/total;
    # they are written that way still, and read back into the same TokenUsage.
    usage = {UsageKey("agent", "m"): TokenUsage(prompt_tokens=6000, output_tokens=300, cached_tokens=20,
                                                 total_tokens=6300)}
    est = estimate_cost(usage, PriceTable(prices={"m": ModelPrice(prompt=1.0, output=2.0)}))
    written = est.model_dump(mode="json")
    assert written["lines"][0]["usage"] == {"prompt": 6000, "output": 300, "cached": 20, "total": 6300}
    assert CostEstimate.model_validate(written) == est
    old = {"lines": [{"who": "judge", "model": "m", "usage": {"prompt": 5, "output": 1, "cached": 0, "total": 6},
                      "cost_usd": None}], "sources": ["built-in"]}
    assert CostEstimate.model_validate(old).lines[0].usage == TokenUsage(prompt_tokens=5, output_tokens=1,
                                                                          total_tokens=6)


def test_unknown_model_is_none_never_zero() -> None:
    usage = {UsageKey("agent", "gemini-2.5-flash"): TokenUsage(prompt_tokens=1_000_000),
             UsageKey("judge", "my-local-llm"): TokenUsage(prompt_tokens=5, output_tokens=5)}
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
