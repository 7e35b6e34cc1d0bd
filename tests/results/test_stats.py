"""The statistics of docs/en/statistics.md against values published for the same inputs (each test names
its source), never against values computed by the code under test."""

from __future__ import annotations

import math

import pytest

from evalspec.results.stats import (
    clopper_pearson_upper,
    conversations_to_bound,
    detectable_drop,
    format_rate,
    mcnemar_exact_one_sided,
    mcnemar_pairs,
    pass_at_k,
    pass_hat_k,
    pass_k_curves,
    sign_test,
    wilson,
)

# Newcombe RG (1998), "Two-sided confidence intervals for the single proportion: comparison of seven
# methods", Statistics in Medicine 17:857-872, Table II: the examples (a)-(d), method 3 (Wilson score,
# no continuity correction) and method 5 (Clopper-Pearson "exact"), 95 %, to four decimals.
NEWCOMBE = [
    # successes, n, Wilson lo, Wilson hi, exact lo, exact hi
    (81, 263, 0.2553, 0.3662, 0.2527, 0.3676),
    (15, 148, 0.0624, 0.1605, 0.0578, 0.1617),
    (0, 20, 0.0000, 0.1611, 0.0000, 0.1684),
    (1, 29, 0.0061, 0.1718, 0.0009, 0.1776),
]


@pytest.mark.parametrize(("k", "n", "lo", "hi", "_exact_lo", "_exact_hi"), NEWCOMBE)
def test_wilson_interval_matches_newcombe_1998_table_ii(k: int, n: int, lo: float, hi: float,
                                                        _exact_lo: float, _exact_hi: float) -> None:
    interval = wilson(k, n)
    assert interval is not None
    assert interval[0] == pytest.approx(lo, abs=5e-5)
    assert interval[1] == pytest.approx(hi, abs=5e-5)


def test_wilson_over_no_verdict_is_none_and_shown_as_a_dash() -> None:
    assert wilson(0, 0) is None
    assert format_rate(0, 0) == "—"


def test_format_rate_reads_as_the_spec_example() -> None:
    """SPEC §27's example: 36 of 40 is "90% (77–96%, n=40)" (Wilson 0.7695–0.9604)."""
    assert format_rate(36, 40) == "90% (77–96%, n=40)"
    assert format_rate(40, 40).startswith("100% (")
    assert format_rate(199, 200).startswith("99.5% (")  # never "100%" for a share that is not all


def test_wilson_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="between 0 and n"):
        wilson(5, 4)


@pytest.mark.parametrize(("k", "n", "_lo", "_hi", "_exact_lo", "exact_hi"), NEWCOMBE)
def test_clopper_pearson_upper_matches_newcombe_1998_exact_limits(k: int, n: int, _lo: float, _hi: float,
                                                                  _exact_lo: float, exact_hi: float) -> None:
    """The two-sided 95 % exact interval's upper limit is the one-sided 97.5 % upper bound."""
    assert clopper_pearson_upper(k, n, confidence=0.975) == pytest.approx(exact_hi, abs=5e-5)


# Hanley JA, Lippman-Hand A (1983), "If nothing goes wrong, is everything all right? Interpreting zero
# numerators", JAMA 249:1743-1745, Table: exact 95 % upper limits for 0 events in n.
HANLEY = [(1, 0.95), (2, 0.78), (3, 0.63), (4, 0.53), (5, 0.45), (10, 0.26), (20, 0.14), (30, 0.095),
          (50, 0.058), (100, 0.030)]


@pytest.mark.parametrize(("n", "upper"), HANLEY)
def test_zero_breaches_bound_matches_hanley_lippman_hand_1983(n: int, upper: float) -> None:
    digits = 3 if upper < 0.1 else 2
    assert round(clopper_pearson_upper(0, n) or 0, digits) == pytest.approx(upper)


def test_rule_of_three_and_the_spec_example_of_300_conversations() -> None:
    """Hanley & Lippman-Hand's rule of three: 0 in n bounds the rate near 3/n; SPEC §27: 0 breaches in
    300 conversations shows < 1.0 %, 0 in 100 needs 299 to show < 1 %."""
    for n in (300, 1000, 3000):
        assert clopper_pearson_upper(0, n) == pytest.approx(3 / n, rel=0.01)
    assert (clopper_pearson_upper(0, 300) or 1) < 0.01
    assert (clopper_pearson_upper(0, 100) or 0) > 0.01
    assert conversations_to_bound(0.01) == 299


def test_breach_bound_is_none_without_conversations_and_one_when_all_breach() -> None:
    assert clopper_pearson_upper(0, 0) is None
    assert clopper_pearson_upper(7, 7) == 1.0


def test_pass_at_k_is_the_codex_estimator() -> None:
    """Chen et al. (2021), "Evaluating Large Language Models Trained on Code", §2.1: pass@k =
    E[1 − C(n−c, k)/C(n, k)], computed there as 1 − ∏_{i=n−c+1..n} (1 − k/i); checked by hand and
    against that product form."""
    assert pass_at_k(2, 1, 1) == 0.5
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(5, 1, 5) == 1.0  # n − c < k: some repeat among any k passes
    assert pass_at_k(10, 3, 2) == pytest.approx(24 / 45)  # 1 − C(7,2)/C(10,2) = 1 − 21/45
    for n in range(1, 12):
        for c in range(n + 1):
            for k in range(1, n + 1):
                paper = 1.0 if n - c < k else 1 - math.prod(1 - k / i for i in range(n - c + 1, n + 1))
                assert pass_at_k(n, c, k) == pytest.approx(paper)


def test_pass_hat_k_is_the_tau_bench_estimator() -> None:
    """Yao et al. (2024), "τ-bench", §4: pass^k = E[C(c, k)/C(n, k)]: every one of k draws without
    replacement passes. By hand: 2 of 4 passed → pass^2 = 1/6; all passed → 1; fewer than k → 0."""
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert pass_hat_k(4, 2, 1) == 0.5
    assert pass_hat_k(5, 5, 5) == 1.0
    assert pass_hat_k(5, 2, 3) == 0.0
    assert pass_hat_k(8, 6, 4) == pytest.approx(15 / 70)  # C(6,4)/C(8,4)


def test_suite_curves_average_verdicts_that_repeat_up_to_the_smallest_repeat_count() -> None:
    at, hat = pass_k_curves([(4, 2), (3, 3), (1, 1)])  # the single play does not count; m = 3
    assert len(at) == len(hat) == 3
    assert hat == pytest.approx([(0.5 + 1) / 2, (1 / 6 + 1) / 2, (0 + 1) / 2])
    assert at == pytest.approx([(0.5 + 1) / 2, (5 / 6 + 1) / 2, (1 + 1) / 2])
    assert pass_k_curves([(1, 1), (1, 0)]) == ([], [])


def test_mcnemar_exact_matches_armitage_and_berry() -> None:
    """Armitage & Berry (1994), Statistical Methods in Medical Research, p. 127 (as StatsDirect's manual
    works it): two culture media, b = 12, c = 2, exact two-sided P = 0.0129, so the one-sided P(X ≥ 12),
    X ~ Binomial(14, 0.5), is half of it: 106/16384."""
    assert mcnemar_exact_one_sided(12, 2) == pytest.approx(0.0129 / 2, abs=5e-5)
    assert mcnemar_exact_one_sided(12, 2) == 106 / 16384
    assert sign_test(12, 2, "two-sided") == pytest.approx(0.0129, abs=5e-5)
    assert sign_test(12, 2) == mcnemar_exact_one_sided(12, 2)


def test_mcnemar_without_discordant_pairs_is_one_and_a_single_flip_is_not_a_regression() -> None:
    assert mcnemar_exact_one_sided(0, 0) == 1.0
    assert mcnemar_exact_one_sided(1, 0) == 0.5  # one flip: p = 0.5
    assert mcnemar_exact_one_sided(5, 0) == 1 / 32  # five flips, none back: p = 0.03125 < 0.05
    assert sign_test(0, 0, "two-sided") == 1.0
    assert mcnemar_exact_one_sided(3000, 2800) < 0.01  # the beta-function tail beyond the exact sums


def test_mcnemar_sample_size_matches_connors_example() -> None:
    """Connor RJ (1987), "Sample size for testing differences in proportions for the paired-sample design",
    Biometrics 43:207-211, p. 209, as worked by zarathucorp's open-powersamplesize McNemar calculator and
    B. Greenwell's pwr.mcnemar: p10 = 0.05, p01 = 0.45 (ψ = 0.5, δ = 0.4), two-sided α = 0.05 (one-sided
    0.025), power 0.8 → n = 23."""
    assert mcnemar_pairs(discordance=0.5, drop=0.4, alpha=0.025, power=0.8) == 23


def test_detectable_drop_is_the_inverse_of_the_sample_size() -> None:
    """With 40 pairs (ψ = 2δ, one-sided 5 %, power 0.8) Connor's formula needs n ≤ 40 at the drop found
    and more just below it; by hand at δ = 0.30: (1.645·√0.6 + 0.842·√0.51)²/0.09 = (1.274 + 0.601)²/0.09 = 39.1 → 40 pairs."""
    assert mcnemar_pairs(0.6, 0.3) == 40
    drop = detectable_drop(40)
    assert drop is not None
    assert mcnemar_pairs(2 * drop, drop) <= 40 < mcnemar_pairs(2 * (drop - 0.001), drop - 0.001)
    assert detectable_drop(0) is None
    assert (detectable_drop(400, noise=0.2) or 0) > (detectable_drop(400) or 0)  # noise hides small drops
