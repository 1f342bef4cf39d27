"""The margin-certificate study: a tiny unit runs, reproduces its CertUnit, and is coherent."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from genbounds.bounds import margin as mg
from genbounds.experiments import certificates as ce
from genbounds.experiments import margin_certificates as mc

TINY = mc.MarginUnit("mnist_shallow", n=40, n_test=40, width=4, epochs=30, lr=0.1,
                     mc_draws=60, chunk=30, looseness_draws=3)


@pytest.fixture(scope="module")
def result() -> dict[str, np.ndarray]:
    torch.set_num_threads(1)
    return mc.run_unit(TINY)


def test_reproduces_the_certificates_training(result: dict[str, np.ndarray]) -> None:
    cu = TINY.cert_unit()
    torch.manual_seed(cu.seed_of(0, 2))
    data = ce.family_data(cu, 0)
    flat = ce._Flat(ce.make_model(cu, data.X, cu.seed_of(0, 4)))
    theta = ce._fit(cu, flat, flat.vector(), data.X, data.y)
    assert float(result["train_error"][0]) == float(
        ce._mean_loss(cu, flat, theta[None], data.X, data.y)[0])
    assert float(result["test_error"][0]) == float(
        ce._mean_loss(cu, flat, theta[None], data.Xt, data.yt)[0])


def test_coherent(result: dict[str, np.ndarray]) -> None:
    assert result["counts"].shape == (1, mg.GAMMA_GRID.size, mg.SIGMA_GRID.size)
    assert (result["counts"] <= TINY.mc_draws).all()
    for tag in mc.PRIORS:
        b = float(result[f"{tag}.bound"][0])
        assert 0.0 <= b <= 1.0
        # a certificate is never below its own bound-set 0-1 error
        assert b >= float(result[f"{tag}.zero_one_error"][0])
    assert result["data_prior.n_bound"][0] == TINY.n - round(TINY.prior_fraction * TINY.n)
    assert result["delta_each"][0] == pytest.approx(TINY.delta / 2)


def test_configs_and_bad_input() -> None:
    q = mc.MarginCertificatesConfig.quick().units[0]
    cq = ce.CertificatesConfig.quick().units[0]
    for f in ("family", "n", "n_test", "width", "epochs", "lr"):
        assert getattr(q, f) == getattr(cq, f)
    paper = mc.MarginCertificatesConfig.paper().units
    # the certificates study's unit of the same family, size and seed (it runs the stand-in
    # at two sizes)
    cp = {(u.family, u.n, u.first_seed): u for u in ce.CertificatesConfig.paper().units}
    for u in paper:
        c = cp[(u.family, u.n, u.first_seed)]
        assert (u.n, u.n_test, u.width, u.epochs, u.lr) == (c.n, c.n_test, c.width,
                                                           c.epochs, c.lr)
    with pytest.raises(ValueError, match="family"):
        dataclasses.replace(TINY, family="sparse_majority")
    with pytest.raises(ValueError, match="mc_draws"):
        dataclasses.replace(TINY, mc_draws=0)
    with pytest.raises(ValueError, match="unit"):
        mc.run_unit("x")  # type: ignore[arg-type]
