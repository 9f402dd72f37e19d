"""IPS cannot see v → a·v + b (a > 0), the premise of the matched-size null's affine residual
(ips.analysis.nulls.residual_size): every solver's interactions over Ω scale by a, I_AND(∅)
becomes a·v(x_∅) + b, the normalised Ĩ do not move, and so neither does any pair's IPS."""

from __future__ import annotations

import numpy as np
import pytest

from ips.analysis import metrics
from ips.interactions import and_or

BANDS = (None, "low", "mid", "high")
TAUS = np.array([0.05, 0.1, 0.2])


@pytest.mark.parametrize("solver", ["exact", "first_order", "sgd"])
def test_ips_is_blind_to_scale_and_shift(solver):
    """Seeded random games of n = 2..5, three samples, two templates; template T's game is
    replaced by a·v_T + b (a uniform on [0.05, 20], b normal of sd 50)."""
    rng = np.random.default_rng(11)
    for n in (2, 3, 4, 5):
        v = rng.normal(size=(3, 2, 1 << n))
        a = rng.uniform(0.05, 20.0, size=(3, 1))
        b = rng.normal(scale=50.0, size=(3, 1))
        moved = v.copy()
        moved[:, 0] = a * v[:, 0] + b
        fits = [and_or(x, solver=solver) for x in (v, moved)]
        scale = np.abs(fits[0].and_).max()
        assert np.allclose(fits[1].and_[:, 0, 1:], a * fits[0].and_[:, 0, 1:],
                           atol=1e-9 * scale * a)
        assert np.allclose(fits[1].or_[:, 0, 1:], a * fits[0].or_[:, 0, 1:],
                           atol=1e-9 * scale * a)
        assert np.allclose(fits[1].and_[:, 0, 0], a[:, 0] * v[:, 0, 0] + b[:, 0], atol=1e-9)
        norms = [metrics.normalize(f.and_, f.or_) for f in fits]
        assert np.allclose(norms[0], norms[1], atol=1e-9, equal_nan=True)
        for band in BANDS:
            ips = [metrics.ips(x, tau=TAUS, band=band).per_pair for x in norms]
            assert np.allclose(ips[0], ips[1], atol=1e-9, equal_nan=True), (n, band)
        assert np.isfinite(metrics.ips(norms[0], tau=TAUS).per_pair).all()
