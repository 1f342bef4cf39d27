"""The certificates study: registration, configs, and one tiny unit per family end to end."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from genbounds.bounds import pac_bayes as pb
from genbounds.experiments import certificates as ce
from genbounds.experiments.registry import get_experiment


def test_registered_with_quick_and_paper() -> None:
    e = get_experiment("certificates")
    assert e.chapter == "notebooks/07_certificates.md"
    q, p = e.config("quick"), e.config("paper")
    assert {u.family for u in q.units} == set(ce.FAMILIES) == {u.family for u in p.units}
    mq = next(u for u in q.units if u.family == "mnist_shallow")
    assert mq.n == 400  # chapter 03's real-digit size
    assert all(u.seeds >= 3 for u in p.units)
    assert e.estimate is not None and e.estimate(q).seconds > 0


def test_bad_unit_names_the_argument() -> None:
    with pytest.raises(ValueError, match="family"):
        ce.CertUnit("nope", n=100, n_test=100, width=4, epochs=1, lr=0.1)
    with pytest.raises(ValueError, match="prior_fraction"):
        ce.CertUnit("mnist_shallow", n=100, n_test=100, width=4, epochs=1, lr=0.1,
                    prior_fraction=1.5)
    with pytest.raises(ValueError, match="config"):
        ce.units("quick")  # type: ignore[arg-type]


def _tiny(family: str) -> ce.CertUnit:
    base = next(u for u in ce.CertificatesConfig.quick().units if u.family == family)
    return dataclasses.replace(base, n=64, n_test=64, epochs=5, post_steps=3, mc_train=2,
                               mc_samples=20, mc_test=5, subspace_dims=(4,), subspace_steps=3,
                               batch=32)


@pytest.mark.parametrize("family", ["mnist_shallow", "sparse_majority", "teacher_student"])
def test_tiny_unit_runs_and_its_certificates_are_consistent(family: str) -> None:
    u = _tiny(family)
    out = ce.run_unit(u)
    for k, v in out.items():
        assert v.shape == (1,), k
    assert all(np.isfinite(out[k]).all() for k in out if not k.startswith("paper_risk"))
    for tag in ("init_prior", "data_prior"):
        assert out[f"{tag}.mc_upper"][0] >= out[f"{tag}.mc_error"][0]
        assert out[f"{tag}.bound"][0] >= out[f"{tag}.mc_upper"][0]
        assert out[f"{tag}.bound"][0] <= out[f"{tag}.mcallester"][0] + 1e-12
        assert out[f"{tag}.lam"][0] in pb.prior_variance_grid()
    n_p = int(round(u.prior_fraction * u.n))
    assert out["data_prior.n_bound"][0] == u.n - n_p and out["init_prior.n_bound"][0] == u.n
    # recompute the data-prior certificate from its stored pieces
    c = pb.gaussian_certificate(out["data_prior.mc_error"][0], u.mc_samples,
                                out["data_prior.kl"][0], u.n - n_p, u.delta,
                                mc_share=u.mc_share, grid_size=pb.PRIOR_GRID_SIZE)
    assert math.isclose(c["bound"], out["data_prior.bound"][0], rel_tol=1e-9)
    assert out["occam.bound"][0] >= out["occam.train_error"][0]
    assert out["occam.dim"][0] == 4
    if family == "teacher_student":
        assert all(np.isnan(v).all() for k, v in out.items() if k.startswith("paper_risk"))
    else:
        assert any(np.isfinite(v).all() for k, v in out.items() if k.startswith("paper_risk"))
