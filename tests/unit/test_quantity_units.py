"""The guard's unit table agrees with pint, the units library, for every spelling it recognises."""

from __future__ import annotations

from typing import Any

import pint
import pytest

from core.guard.quantities import units

REGISTRY: Any = pint.UnitRegistry(cache_folder=None)


@pytest.mark.parametrize("name", sorted(units.UNIT_SECONDS))
def test_duration_factors_are_pints(name: str) -> None:
    """Seconds per unit, as pint defines them."""
    assert units.UNIT_SECONDS[name] == pytest.approx(REGISTRY.Quantity(1, name).to("second").magnitude, rel=1e-12)


@pytest.mark.parametrize("name", sorted(units.UNIT_BYTES))
def test_size_factors_are_pints(name: str) -> None:
    """Bytes per unit, decimal and binary prefixes, as pint defines them."""
    assert units.UNIT_BYTES[name] == pytest.approx(REGISTRY.Quantity(1, name).to("byte").magnitude, rel=1e-12)


@pytest.mark.parametrize("spelling", sorted(units.DURATION_SPELLINGS))
def test_every_duration_spelling_names_its_pint_unit(spelling: str) -> None:
    """Where pint reads the spelling itself, it reads the same unit we do (ms is a millisecond, h an hour...)."""
    try:
        parsed = REGISTRY.Quantity(1, spelling)
    except (pint.UndefinedUnitError, AttributeError, ValueError):
        return  # a spelling pint does not know (e.g. 'wks'); its unit name is checked above
    if parsed.dimensionality == REGISTRY.Quantity(1, "second").dimensionality:
        assert units.DURATION_SECONDS[spelling] == pytest.approx(parsed.to("second").magnitude)
