"""How sure a number is (docs/en/statistics.md): intervals for rates, pass@k and pass^k, the paired test
that decides a regression, bounds on a red line's breach rate, and how many conversations a plan needs.

Pure functions over counts, the standard library only: `statistics.NormalDist` for normal quantiles,
`math.comb` for exact binomial sums, and a continued fraction for the regularized incomplete beta
function where the counts are too large to sum exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from statistics import NormalDist

DASH = "—"  # an interval or bound over no verdict (never a number)

_EXACT_LIMIT = 2000  # binomial tails summed with integers up to this many trials, then by the beta function
_NORMAL = NormalDist()


def _z(p: float) -> float:
    """The standard normal quantile of `p`."""
    return _NORMAL.inv_cdf(p)


def _check_counts(k: int, n: int, what: str = "successes") -> None:
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"{what} must be between 0 and n: got {k} of {n}")


def _check_level(value: float, name: str) -> None:
    if not 0 < value < 1:
        raise ValueError(f"{name} must be between 0 and 1 (exclusive): got {value}")


# ---------------------------------------------------------------------------------------------- intervals

def wilson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval (without continuity correction) of `successes` in `n`; None when n = 0
    (shown as `—`)."""
    _check_counts(successes, n)
    _check_level(confidence, "confidence")
    if n == 0:
        return None
    z = _z(1 - (1 - confidence) / 2)
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denominator = 1 + z * z / n
    lo = 0.0 if successes == 0 else max(0.0, (centre - spread) / denominator)
    hi = 1.0 if successes == n else min(1.0, (centre + spread) / denominator)
    return lo, hi


def _percent(x: float, exact: bool) -> str:
    """A share as a whole percent; one decimal where rounding would read 0 % or 100 % of a share that
    is not exactly that (199 of 200 passed is 99.5 %, not 100 %)."""
    whole = math.floor(x * 100 + 0.5)
    if not exact and whole in (0, 100):
        return f"{math.floor(x * 1000 + 0.5) / 10:.1f}"
    return str(whole)


def format_rate(k: int, n: int, confidence: float = 0.95) -> str:
    """`90% (77–96%, n=40)`: a rate with its Wilson interval and what it counts; `—` with no verdict."""
    interval = wilson(k, n, confidence)
    if interval is None:
        return DASH
    lo, hi = interval
    rate = _percent(k / n, k in (0, n))
    return f"{rate}% ({_percent(lo, k == 0)}–{_percent(hi, k == n)}%, n={n})"


# ------------------------------------------------------------------------------------------ pass@k, pass^k

def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate that at least one of k repeats passes, from c passed of n (Chen et al. 2021):
    1 − C(n−c, k)/C(n, k)."""
    _check_counts(c, n, "passed repeats")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}: got {k}")
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate that all of k repeats pass, from c passed of n (τ-bench, Yao et al. 2024):
    C(c, k)/C(n, k)."""
    _check_counts(c, n, "passed repeats")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}: got {k}")
    return math.comb(c, k) / math.comb(n, k)


def pass_k_curves(verdicts: Iterable[tuple[int, int]] | Mapping[tuple[int, int], int]) -> tuple[list[float], list[float]]:
    """(pass@k, pass^k) for k = 1..m, averaged over the verdicts `(n, c)` with n ≥ 2, m the smallest such
    n; two empty lists when no verdict repeats. `verdicts` may be a count of each `(n, c)` (a Counter)."""
    counted = verdicts.items() if isinstance(verdicts, Mapping) else ((v, 1) for v in verdicts)
    repeated = [(n, c, times) for (n, c), times in counted if n >= 2 and times]
    if not repeated:
        return [], []
    m = min(n for n, _, _ in repeated)
    total = sum(times for _, _, times in repeated)
    at, hat = [0.0] * m, [0.0] * m
    for n, c, times in repeated:  # C(c, k)/C(n, k) = Π (c − i)/(n − i) over i < k: one product per k, however large n
        all_pass = none_pass = 1.0
        for k in range(m):
            all_pass *= (c - k) / (n - k)
            none_pass *= (n - c - k) / (n - k)
            hat[k] += all_pass * times
            at[k] += (1 - none_pass) * times
    return [x / total for x in at], [x / total for x in hat]


# ------------------------------------------------------------------------------------- the binomial tail

def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1 - math.exp(log_front) * _betacf(b, a, 1 - x) / b


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X ≥ k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p == 0.5 and n <= _EXACT_LIMIT:
        return sum(math.comb(n, i) for i in range(k, n + 1)) / (1 << n)
    return _betainc(k, n - k + 1, p)


# ------------------------------------------------------------------------------------- tests of a change

def mcnemar_exact_one_sided(b: int, c: int) -> float:
    """The one-sided exact McNemar p-value of b passed → failed against c failed → passed pairs:
    P(X ≥ b) for X ~ Binomial(b + c, 0.5); 1 when b + c = 0."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts cannot be negative: b={b}, c={c}")
    return binomial_sf(b, b + c, 0.5) if b + c else 1.0


def sign_test(losses: int, wins: int, alternative: str = "greater") -> float:
    """The sign test of losses against wins, ties dropped (a pairwise comparison against a baseline).
    `greater`: P(X ≥ losses), X ~ Binomial(losses + wins, 0.5) — more losses than chance; `two-sided`:
    twice the smaller tail, at most 1. Both are 1 when there is neither a loss nor a win."""
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative must be 'greater' or 'two-sided': got {alternative!r}")
    if alternative == "greater":
        return mcnemar_exact_one_sided(losses, wins)
    if losses + wins == 0:
        return 1.0
    tail = min(mcnemar_exact_one_sided(losses, wins), mcnemar_exact_one_sided(wins, losses))
    return min(1.0, 2 * tail)


# ------------------------------------------------------------------------------ red lines as bounds

def clopper_pearson_upper(breaches: int, n: int, confidence: float = 0.95) -> float | None:
    """The one-sided Clopper–Pearson upper bound of a breach rate: the rate p at which `breaches` or fewer
    in `n` would happen with probability 1 − confidence (0 breaches: 1 − (1 − confidence)^(1/n));
    None when n = 0."""
    _check_counts(breaches, n, "breaches")
    _check_level(confidence, "confidence")
    if n == 0:
        return None
    alpha = 1 - confidence
    if breaches == n:
        return 1.0
    if breaches == 0:
        return 1 - float(alpha ** (1 / n))
    lo, hi = breaches / n, 1.0  # P(X ≤ breaches) falls from above alpha to 0 as p rises: bisect for alpha
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1 - binomial_sf(breaches + 1, n, mid) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    return hi


def conversations_to_bound(rate: float, confidence: float = 0.95) -> int:
    """The fewest conversations that, with no breach, show the breach rate below `rate`: the smallest n
    with 1 − (1 − confidence)^(1/n) ≤ rate (299 for 1 % at 95 %)."""
    _check_level(rate, "the rate")
    _check_level(confidence, "confidence")
    n = math.ceil(math.log(1 - confidence) / math.log1p(-rate))
    while n > 1 and 1 - (1 - confidence) ** (1 / (n - 1)) <= rate:  # a float's last bit must not cost one more
        n -= 1
    while 1 - (1 - confidence) ** (1 / n) > rate:
        n += 1
    return n


# ----------------------------------------------------------------------------------- how much is enough

def mcnemar_pairs(discordance: float, drop: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Pairs needed for the one-sided McNemar test at `alpha` to detect a fall of the pass rate by `drop`
    with `power`, the pairs whose verdicts differ being a share `discordance` of all (Connor 1987):
    n = (z_(1−α)·√ψ + z_power·√(ψ − δ²))² / δ², rounded up."""
    _check_level(alpha, "alpha")
    _check_level(power, "power")
    if not 0 < drop <= discordance <= 1:
        raise ValueError(f"need 0 < drop ≤ discordance ≤ 1: got drop={drop}, discordance={discordance}")
    root = _z(1 - alpha) * math.sqrt(discordance) + _z(power) * math.sqrt(max(0.0, discordance - drop * drop))
    return math.ceil(root * root / (drop * drop) - 1e-9)


def assumed_discordance(drop: float, noise: float | None) -> float:
    """The share of pairs whose verdicts differ under a true drop: with the noise floor measured on a
    baseline (how often two plays of one instance disagree), that noise plus the drop; else 2 × the
    drop; at most 1."""
    return min(1.0, (noise + drop) if noise is not None else 2 * drop)


def detectable_drop(pairs: int, alpha: float = 0.05, power: float = 0.8,
                    noise: float | None = None) -> float | None:
    """The smallest fall of the pass rate that `pairs` pairs detect at `power` (Connor 1987, the
    discordance as `assumed_discordance`); None when no drop up to the whole rate can be detected."""
    if pairs <= 0:
        return None

    def enough(drop: float) -> bool:
        return mcnemar_pairs(assumed_discordance(drop, noise), drop, alpha, power) <= pairs

    if not enough(1.0):
        return None
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if mid > 0 and enough(mid):
            hi = mid
        else:
            lo = mid
    return hi
