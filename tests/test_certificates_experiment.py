"""The certificates study: registration, configs, and one tiny unit per family end to end."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from genbounds.bounds import compression as cp
from genbounds.bounds import derandomise as dr
from genbounds.bounds import pac_bayes as pb
from genbounds.experiments import certificates as ce
from genbounds.experiments.registry import get_experiment, stored_units


def test_registered_with_quick_and_paper() -> None:
    e = get_experiment("certificates")
    assert e.chapter == "notebooks/07_certificates.md"
    q, p = e.config("quick"), e.config("paper")
    assert {u.family for u in q.units} == set(ce.FAMILIES) == {u.family for u in p.units}
    mq = next(u for u in q.units if u.family == "mnist_shallow")
    assert mq.n == 400  # chapter 03's real-digit size
    # paper scale: one unit per (family, size, seed), three seeds per size; the stand-in at
    # N = 4,000 and at its largest N = 12,000
    sizes = {(u.family, u.n) for u in p.units}
    assert {n for f, n in sizes if f == "fashion_shallow"} == {4000, 12000}
    for f, n in sizes:
        fam = [u for u in p.units if (u.family, u.n) == (f, n)]
        assert sorted(u.first_seed for u in fam) == [0, 1, 2] and all(u.seeds == 1 for u in fam)
    assert len({dataclasses.astuple(u) for u in p.units}) == len(p.units)
    assert e.estimate is not None and e.estimate(q).seconds > 0


def test_bad_unit_names_the_argument() -> None:
    with pytest.raises(ValueError, match="family"):
        ce.CertUnit("nope", n=100, n_test=100, width=4, epochs=1, lr=0.1)
    with pytest.raises(ValueError, match="prior_fraction"):
        ce.CertUnit("mnist_shallow", n=100, n_test=100, width=4, epochs=1, lr=0.1,
                    prior_fraction=1.5)
    with pytest.raises(ValueError, match="config"):
        ce.units("quick")  # type: ignore[arg-type]
    good = dict(family="mnist_shallow", n=100, n_test=100, width=4, epochs=1, lr=0.1)
    for field, bad in (("device", "bogus"), ("first_seed", -1), ("seed", 1.5),
                       ("subspace_dims", (0,)), ("subspace_dims", [16]),
                       ("noise_std", -1.0), ("mc_share", 1.0), ("delta", 0.0),
                       ("prior_optimizer", "sgd"), ("n_test", 0), ("lr", -0.1)):
        with pytest.raises(ValueError, match=field):
            ce.CertUnit(**{**good, field: bad})  # type: ignore[arg-type]


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
    for tag in ("init_prior", "data_prior", "trained_gibbs"):
        # the KL by part, and the rounding term against the optimiser's continuous KL
        assert math.isclose(out[f"{tag}.kl_mean_term"][0] + out[f"{tag}.kl_variance_term"][0],
                            out[f"{tag}.kl"][0], rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(out[f"{tag}.kl_continuous"][0] + out[f"{tag}.kl_rounding"][0],
                            out[f"{tag}.kl"][0], rel_tol=1e-9, abs_tol=1e-9)
        assert 0 <= out[f"{tag}.test_gibbs"][0] <= out[f"{tag}.test_gibbs_bound"][0] <= 1
        assert out[f"{tag}.mc_upper"][0] >= out[f"{tag}.mc_error"][0]
        assert out[f"{tag}.bound"][0] >= out[f"{tag}.mc_upper"][0]
        assert out[f"{tag}.bound"][0] <= out[f"{tag}.mcallester"][0] + 1e-12
        assert out[f"{tag}.lam"][0] in pb.prior_variance_grid()
    n_p = int(round(u.prior_fraction * u.n))
    assert out["data_prior.n_bound"][0] == u.n - n_p and out["init_prior.n_bound"][0] == u.n
    # recompute the certificates from their stored pieces, each at delta / 5
    assert out["delta_each"][0] == u.delta / ce.N_CERTIFICATES == u.delta / 5
    for tag, nb in (("data_prior", u.n - n_p), ("trained_gibbs", u.n - n_p),
                    ("init_prior", u.n)):
        c = pb.gaussian_certificate(out[f"{tag}.mc_error"][0], u.mc_samples,
                                    out[f"{tag}.kl"][0], nb, u.delta / 5,
                                    mc_share=u.mc_share, grid_size=pb.PRIOR_GRID_SIZE)
        assert math.isclose(c["bound"], out[f"{tag}.bound"][0], rel_tol=1e-9), tag
    # the Gibbs posterior of the trained network is centred at the trained weights
    assert out["trained_gibbs.mean_test_error"][0] == out["test_error"][0]
    assert out["trained_draw.bound"][0] == dr.disintegrated_kl_bound(
        out["trained_draw.train_error"][0], out["trained_draw.log_ratio"][0], u.n - n_p,
        u.delta / 5, grid_size=pb.PRIOR_GRID_SIZE)
    assert math.isclose(out["occam.bound"][0], cp.occam_bound(
        out["occam.train_error"][0], out["occam.bits"][0], u.n, u.delta / 5), rel_tol=1e-12)
    for k in ("test_bound", "occam.test_bound", "trained_draw.test_bound"):
        assert 0 <= out[k][0] <= 1
    assert out["occam.bound"][0] >= out["occam.train_error"][0]
    assert out["occam.dim"][0] == 4
    if family == "teacher_student":
        assert all(np.isnan(v).all() for k, v in out.items() if k.startswith("paper_risk"))
    else:
        assert any(np.isfinite(v).all() for k, v in out.items() if k.startswith("paper_risk"))


def test_every_stored_paper_certificate_is_recomputed_from_its_pieces() -> None:
    """Each committed paper unit of the study (every family and size; none stored: nothing to
    check): its five certificates put together again from the stored errors, KLs, code lengths
    and the unit's delta share, each above its predictor's error on the data it used."""
    found = stored_units(ce.EXPERIMENT, "paper", warn=False)
    for u, rec in zip(found.units, found.results, strict=True):
        if rec is None:
            continue
        a, d = rec.arrays, u.delta / u.n_certificates
        n_b = u.n - int(round(u.prior_fraction * u.n))
        assert float(a["delta_each"][0]) == d
        for tag, nb in (("data_prior", n_b), ("trained_gibbs", n_b), ("init_prior", u.n)):
            assert int(a[f"{tag}.n_bound"][0]) == nb
            c = pb.gaussian_certificate(float(a[f"{tag}.mc_error"][0]), u.mc_samples,
                                        float(a[f"{tag}.kl"][0]), nb, d,
                                        mc_share=u.mc_share, grid_size=pb.PRIOR_GRID_SIZE)
            assert math.isclose(c["bound"], float(a[f"{tag}.bound"][0]), rel_tol=1e-9), (
                u.family, u.n, tag)
            assert c["bound"] >= c["mc_upper"] >= float(a[f"{tag}.mc_error"][0])
        assert float(a["trained_draw.bound"][0]) == dr.disintegrated_kl_bound(
            float(a["trained_draw.train_error"][0]), float(a["trained_draw.log_ratio"][0]),
            n_b, d, grid_size=pb.PRIOR_GRID_SIZE)
        assert math.isclose(float(a["occam.bound"][0]), cp.occam_bound(
            float(a["occam.train_error"][0]), float(a["occam.bits"][0]), u.n, d), rel_tol=1e-12)
