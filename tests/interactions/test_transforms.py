"""ips.interactions.transforms against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ips.interactions import harsanyi, mobius, reconstruct, zeta
from ips.interactions.transforms import butterfly
from reference import brute_harsanyi, brute_matching


@pytest.mark.parametrize("n", range(7))
def test_harsanyi_matches_brute_force(n):
    rng = np.random.default_rng(n)
    v = rng.normal(size=1 << n) * 5
    assert np.allclose(harsanyi(v), brute_harsanyi(v), atol=1e-10, rtol=0)


def test_harsanyi_batched_equals_per_vector():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(3, 4, 1 << 5))
    batched = harsanyi(v)
    for i, j in itertools.product(range(3), range(4)):
        assert np.allclose(batched[i, j], brute_harsanyi(v[i, j]), atol=1e-10, rtol=0)


def test_zeta_inverts_mobius_and_reconstruct_matches_brute():
    rng = np.random.default_rng(1)
    f = rng.normal(size=(2, 1 << 6))
    assert np.allclose(zeta(mobius(f)), f, atol=1e-12)
    i_and, i_or = rng.normal(size=(2, 1 << 6))
    i_or[0] = 0.0
    v = reconstruct(i_and, i_or)
    assert brute_matching(v, i_and, i_or) < 1e-10
    assert v[0] == pytest.approx(i_and[0])


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 7, 9])
def test_butterfly_general_factor_matches_dense_kronecker(n):
    """The blocked (BLAS) path for a general 2×2 factor, and the transposed zeta/Möbius passes,
    against the dense ⊗ matrix (bit i of the index ↔ the i-th factor from the right)."""
    rng = np.random.default_rng(400 + n)
    mats = [rng.normal(size=(2, 2)), np.array([[1.0, -1.0], [0.0, 1.0]]),
            np.array([[1.0, 1.0], [0.0, 1.0]])]
    f = rng.normal(size=(3, 1 << n))
    for mat in mats:
        dense = np.ones((1, 1))
        for _ in range(n):
            dense = np.kron(mat, dense)
        assert np.allclose(butterfly(f.copy(), mat), f @ dense.T, atol=1e-10, rtol=1e-12)


@pytest.mark.parametrize("n", [13, 14, 15])
def test_butterfly_general_factor_large_n_matches_levelwise(n):
    """Large n (the blocked path splits its BLAS calls): against a plain per-level 2×2 update."""
    rng = np.random.default_rng(500 + n)
    mat = rng.normal(size=(2, 2))
    f = rng.normal(size=(2, 1 << n))
    ref = f.copy()
    for i in range(n):
        g = ref.reshape(2, -1, 2, 1 << i)
        lo, hi = g[:, :, 0, :].copy(), g[:, :, 1, :].copy()
        g[:, :, 0, :] = mat[0, 0] * lo + mat[0, 1] * hi
        g[:, :, 1, :] = mat[1, 0] * lo + mat[1, 1] * hi
    got = butterfly(f.copy(), mat)
    assert np.allclose(got, ref, atol=1e-9 * np.abs(ref).max(), rtol=0)
    view = np.asfortranarray(f)  # a non-contiguous input is transformed in place too
    butterfly(view, mat)
    assert np.allclose(view, ref, atol=1e-9 * np.abs(ref).max(), rtol=0)
