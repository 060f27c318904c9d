"""Price files (issue 27): a user's table merged over the base model by model (sources appended, zero prices and
rates allowed), and every refusal named by file and field."""

from __future__ import annotations

import re

import pytest

from surveyalign.calls.cost import ModelPrice, PriceTable, load_prices

BASE = """as_of: "2026-01-15"
sources: ["https://a.example/pricing"]
models:
  m1: {input: 1, output: 2}
  m2: {input: 0, output: 0, cached_input: 0}
gpu_hour_usd: {H100: 0}
"""
OVERRIDE = """as_of: "2026-02-01"
sources: ["https://b.example/pricing"]
models:
  m1: {input: 3, output: 4, unverified: true}
gpu_hour_usd: {A100: 1.5}
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_override_merges_model_by_model(tmp_path):
    base, user = _write(tmp_path, "base.yaml", BASE), _write(tmp_path, "user.yaml", OVERRIDE)
    assert load_prices(base, override=user) == PriceTable(
        as_of="2026-02-01", currency="USD",
        models={"m1": ModelPrice(3.0, 4.0, unverified=True), "m2": ModelPrice(0.0, 0.0, cached_input=0.0)},
        gpu_hour_usd={"H100": 0.0, "A100": 1.5}, sources=["https://a.example/pricing", "https://b.example/pricing"],
        files=[str(base), str(user)])
    euro = _write(tmp_path, "eur.yaml", 'as_of: "2026-01-15"\ncurrency: EUR\n')
    assert load_prices(euro).currency == "EUR"
    with pytest.raises(ValueError, match=f"^{re.escape(f'{user}: currency USD differs from EUR of {euro}')}$"):
        load_prices(euro, override=_write(tmp_path, "user.yaml", OVERRIDE + "currency: USD\n"))


@pytest.mark.parametrize(("text", "message"), [
    ('as_of: "x"\nmodels:\n  m1: [1, 2]\n',
     "models.m1: expected a mapping of input, cached_input, output, batch_input, batch_output, cache_write"),
    ('as_of: "x"\nmodels:\n  m1: {input: 1, output: 1, speed: 2, cache: 1}\n',
     ("models.m1: unknown field(s) cache, speed; known: input, cached_input, output, batch_input, batch_output, "
     "cache_write, unverified")),
    ('as_of: "x"\nmodels:\n  m1: {output: 1}\n', "models.m1.input: required (USD per million tokens)"),
    ('as_of: "x"\nmodels:\n  m1: {input: true, output: 1}\n', "models.m1.input: expected a number >= 0, got True"),
    ('as_of: "x"\nmodels:\n  m1: {input: -1, output: 1}\n', "models.m1.input: expected a number >= 0, got -1"),
    ('as_of: "x"\nmodels: [m1]\n', "models: expected a mapping of model id -> prices"),
    ('as_of: "x"\ngpu_hour_usd: [H100]\n', "gpu_hour_usd: expected a mapping of GPU name -> USD per hour"),
    ('as_of: "x"\ngpu_hour_usd: {H100: true}\n', "gpu_hour_usd.H100: expected a number >= 0, got True"),
    ('as_of: "x"\ngpu_hour_usd: {H100: "2"}\n', "gpu_hour_usd.H100: expected a number >= 0, got '2'"),
    ('as_of: "x"\ngpu_hour_usd: {H100: -0.5}\n', "gpu_hour_usd.H100: expected a number >= 0, got -0.5"),
    ('as_of: "x"\nprice: 1\nmodel: m\n',
     "unknown key(s) model, price; known: as_of, currency, sources, models, gpu_hour_usd"),
    ("- a\n- b\n", "the top level of a price table must be a mapping, got list"),
])
def test_refusals_name_file_and_field(tmp_path, text, message):
    path = _write(tmp_path, "p.yaml", text)
    with pytest.raises(ValueError, match=f"^{re.escape(f'{path}: {message}')}$"):
        load_prices(path)


def test_missing_file(tmp_path):
    missing = tmp_path / "no.yaml"
    with pytest.raises(FileNotFoundError, match=f"^{re.escape(f'price table {missing}: no such file')}$"):
        load_prices(missing)
