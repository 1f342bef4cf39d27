"""The sample-split baseline of chapter 07 and the PAC-Bayes-kl floor it is compared with.

``split_binomial_certificate`` against scipy's Clopper-Pearson quantile, known values, monotonicity
and bad input; ``pac_bayes_kl_floor`` against the kl form at ``KL = 0``; the retrained prior of
``prior_split_errors`` against the one ``run_unit`` certifies (a tiny unit, bitwise); and every
committed paper-scale MNIST unit's baseline recomputed from its stored numbers.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.stats import beta

from genbounds.bounds import baselines as bl
from genbounds.bounds import pac_bayes as pb
from genbounds.experiments import certificates as ce
from genbounds.experiments.registry import stored_units
from genbounds.results.keys import config_hash

G = pb.PRIOR_GRID_SIZE


# ------------------------------------------------------------------------- the split bound
@pytest.mark.parametrize("n", [1, 7, 200, 2000])
@pytest.mark.parametrize("delta", [0.01, 0.05, 0.5])
def test_split_equals_the_clopper_pearson_quantile(n: int, delta: float) -> None:
    for k in sorted({0, 1, n // 3, n - 1}):
        if k >= n:
            continue
        want = float(beta.ppf(1 - delta, k + 1, n - k))
        assert bl.split_binomial_certificate(k, n, delta) == pytest.approx(want, abs=1e-9)
    assert bl.split_binomial_certificate(n, n, delta) == 1.0


def test_split_known_values() -> None:
    # no error: (1 - p)^n = delta exactly
    for n, d in ((200, 0.01), (400, 0.05)):
        assert bl.split_binomial_certificate(0, n, d) == pytest.approx(1 - d ** (1 / n),
                                                                       abs=1e-10)
    # one error in two points at delta = 1/4: (1 - p)^2 + 2p(1 - p) = 1 - p^2 = 1/4
    assert bl.split_binomial_certificate(1, 2, 0.25) == pytest.approx(math.sqrt(0.75), abs=1e-10)


def test_split_is_monotone() -> None:
    ks = [bl.split_binomial_certificate(k, 200, 0.01) for k in range(0, 30)]
    assert all(b > a for a, b in zip(ks, ks[1:], strict=False))  # more errors, larger
    ns = [bl.split_binomial_certificate(4, n, 0.01) for n in (50, 100, 200, 400, 800)]
    assert all(b < a for a, b in zip(ns, ns[1:], strict=False))  # more points, smaller
    ds = [bl.split_binomial_certificate(4, 200, d) for d in (0.001, 0.01, 0.05, 0.2)]
    assert all(b < a for a, b in zip(ds, ds[1:], strict=False))  # less confidence, smaller
    assert all(v >= 4 / 200 for v in ds)


@pytest.mark.parametrize(("kwargs", "name"), [
    (dict(errors=-1), "errors"), (dict(errors=1.5), "errors"), (dict(errors=True), "errors"),
    (dict(errors=201), "errors"), (dict(n_bound=0), "n_bound"), (dict(delta=0.0), "delta"),
    (dict(delta=1.0), "delta"), (dict(delta=math.nan), "delta")])
def test_split_bad_input_names_the_argument(kwargs: dict, name: str) -> None:
    args = dict(errors=4, n_bound=200, delta=0.01)
    with pytest.raises(ValueError, match=name):
        bl.split_binomial_certificate(**{**args, **kwargs})


# ------------------------------------------------------------------------------ the floor
def test_floor_is_the_kl_form_at_zero_kl() -> None:
    for r in (0.0, 0.02, 0.3):
        for n in (8, 200, 10_000):
            assert bl.pac_bayes_kl_floor(r, n, 0.008, grid_size=G) == pb.pac_bayes_kl(
                r, 0.0, n, 0.008, grid_size=G)
    # at zero error the inverse is closed-form: 1 - exp(-B)
    b = math.log(2 * math.sqrt(200) * G / 0.008) / 200
    assert bl.pac_bayes_kl_floor(0.0, 200, 0.008, grid_size=G) == pytest.approx(
        -math.expm1(-b), abs=1e-10)


def test_floor_is_above_the_split_at_the_same_error() -> None:
    # log(2 sqrt(n) G / delta_pb) > log(1 / delta) and the binomial tail is below its
    # Chernoff (kl) relaxation: at the same error count the floor is never the smaller
    for n in (8, 50, 200, 2000, 20_000):
        for k in sorted({0, 1, n // 50, n // 10}):
            split = bl.split_binomial_certificate(k, n, 0.01)
            assert bl.pac_bayes_kl_floor(k / n, n, 0.008, grid_size=G) > split
            assert bl.pac_bayes_kl_floor(k / n, n, 0.01) > split  # even with G = 1, no MC


def test_break_even_error() -> None:
    q = bl.split_break_even_error(40, 2000, 0.01, 0.008, grid_size=G)
    split = bl.split_binomial_certificate(40, 2000, 0.01)
    assert 0 < q < 40 / 2000
    assert bl.pac_bayes_kl_floor(q, 2000, 0.008, grid_size=G) == pytest.approx(split, abs=1e-9)
    # no error on the bound points: even a Gibbs error of 0 does not beat the split
    assert bl.split_break_even_error(0, 200, 0.01, 0.008, grid_size=G) == 0.0
    with pytest.raises(ValueError, match="delta_pac_bayes"):
        bl.split_break_even_error(4, 200, 0.01, 1.5)
    with pytest.raises(ValueError, match="delta_split"):
        bl.split_break_even_error(4, 200, -0.1, 0.008)


@pytest.mark.parametrize(("kwargs", "name"), [
    (dict(empirical_risk=1.5), "empirical_risk"), (dict(n=7), "n"),
    (dict(delta=0.0), "delta"), (dict(grid_size=0), "grid_size")])
def test_floor_bad_input_names_the_argument(kwargs: dict, name: str) -> None:
    args = dict(empirical_risk=0.02, n=200, delta=0.008)
    with pytest.raises(ValueError, match=name):
        bl.pac_bayes_kl_floor(**{**args, **kwargs})


# --------------------------------------------------------------- the baseline's input
def _tiny() -> ce.CertUnit:
    base = next(u for u in ce.CertificatesConfig.quick().units if u.family == "mnist_shallow")
    return dataclasses.replace(base, n=64, n_test=64, epochs=5, post_steps=3, mc_train=2,
                               mc_samples=20, mc_test=5, subspace_dims=(4,), subspace_steps=3,
                               batch=32)


def test_retrained_priors_are_the_ones_run_unit_certifies() -> None:
    u = _tiny()
    out = ce.run_unit(u)
    got = ce.prior_split_errors(u, 0)
    for tag in ("data_prior", "trained_gibbs"):
        assert got[f"{tag}.test_error"] == out[f"{tag}.prior_test_error"][0]  # bitwise
        k = got[f"{tag}.bound_errors"]
        assert k == int(k) and 0 <= k <= got["n_bound"]
    assert got["n_bound"] == out["data_prior.n_bound"][0] == u.n - out["data_prior.n_prior"][0]
    with pytest.raises(ValueError, match="unit"):
        ce.prior_split_errors("mnist_shallow", 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="j"):
        ce.prior_split_errors(u, -1)


@pytest.mark.slow
def test_every_stored_mnist_unit_has_its_baseline_recomputed() -> None:
    found = stored_units(ce.EXPERIMENT, "paper", warn=False)
    mnist = [r for r in found.present if r.config["family"] == "mnist_shallow"]
    assert len(mnist) == 3
    for rec in mnist:
        a = rec.arrays
        u = next(x for x in found.units if config_hash(x) == rec.key)
        got = ce.prior_split_errors(u, int(a["seed"][0]))
        n_b, d = int(a["data_prior.n_bound"][0]), float(a["delta_each"][0])
        assert got["n_bound"] == n_b and d == pytest.approx(0.05 / 5)
        k = int(got["data_prior.bound_errors"])
        base = bl.split_binomial_certificate(k, n_b, d)
        assert base == pytest.approx(float(beta.ppf(1 - d, k + 1, n_b - k)), abs=1e-9)
        # the retrained prior is the stored one up to float32 rounding on another run: its
        # held-out error within 4 of the 400 held-out digits (measured: 0, 1 and 4)
        assert abs(got["data_prior.test_error"] - a["data_prior.prior_test_error"][0]) <= 4 / 400
        # the certificate the split is set beside: at the same delta share, same bound set
        assert a["data_prior.bound"][0] > bl.pac_bayes_kl_floor(
            float(a["data_prior.mc_error"][0]), n_b, 0.8 * d, grid_size=G)
        assert np.isfinite(base) and k / n_b <= base <= 1
