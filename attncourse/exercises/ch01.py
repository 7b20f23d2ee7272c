"""Chapter 1 exercises: softmax, temperature, overflow, entropy and the Jacobian."""

from __future__ import annotations

import numpy as np

from .. import softmax
from ._common import BROADCAST, NO_MAX, naive_softmax
from ._registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

SOFTMAX_NEEDS = ("import numpy as np", "from attncourse import softmax")


# ----------------------------------------------------------------------------- 1.1 temperature
def _temperature_cases():
    rng = np.random.default_rng(101)
    return (
        grouped(
            "values",
            Case("temperature 1", logits=np.array([2.0, 1.0, 0.1]), temperature=1.0),
            Case("temperature 0.5 sharpens", logits=rng.normal(size=(3, 4)), temperature=0.5),
            Case("temperature 10 flattens", logits=np.array([[4.0, 0.0, -4.0]]), temperature=10.0),
        )
        + grouped(
            "batch dimensions",
            Case("batch dimensions (2, 2, 3)", logits=rng.normal(size=(2, 2, 3)), temperature=2.0),
        )
        + grouped(
            "extreme temperatures",
            Case(
                "temperature 0.001: logits / T in the thousands",
                logits=np.array([[3.0, 2.0, 1.0], [1.0, 1.5, 0.5]]),
                temperature=0.001,
            ),
        )
    )


register(
    Exercise(
        id="ch01.temperature_softmax",
        number="1.1",
        title="softmax with temperature",
        points=1,
        hint="divide the logits by the temperature first",
        function="temperature_softmax",
        description="Divide the logits by the temperature before the softmax: a high temperature "
        "flattens the distribution, a low one sharpens it. One line with `softmax`.",
        solution='''
            def temperature_softmax(logits, temperature):
                """Softmax of logits / temperature over the last axis (temperature > 0)."""
                ### BEGIN SOLUTION
                return softmax(logits / temperature)  # higher temperature -> flatter distribution
                ### END SOLUTION
        ''',
        reference=lambda logits, temperature: softmax(logits / temperature),
        public_cases=_temperature_cases,
        distributions=("result",),
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "multiplied by the temperature; divide the logits by it "
                "(a higher temperature must give a flatter distribution)",
                variant=lambda logits, t: softmax(logits * t),
            ),
            Diagnosis(NO_MAX, variant=lambda logits, t: naive_softmax(logits / t)),
            Diagnosis(BROADCAST, error="could not be broadcast"),
        ),
    )
)


# ----------------------------------------------------------------------------- 1.2 stable softmax
def _stable_cases():
    rng = np.random.default_rng(102)
    return (
        grouped(
            "values",
            Case("three logits", x=np.array([1.0, 2.0, 3.0])),
            Case("a batch of rows (4, 5)", x=rng.normal(size=(4, 5))),
        )
        + grouped(
            "batch dimensions",
            Case("batch dimensions (2, 3, 4)", x=rng.normal(size=(2, 3, 4))),
        )
        + grouped(
            "extreme logits",
            Case("large logits", x=np.array([[1000.0, 1001.0, 1002.0], [-5.0, 0.0, 5.0]])),
            Case("a -inf logit gets weight 0", x=np.array([[0.0, -np.inf, 2.0], [-1000.0, -1001.0, -999.0]])),
        )
    )


def _wrong_axis(x):
    return softmax(x, axis=0) if x.ndim >= 2 else None


def _global_max(x):
    e = np.exp(x - x.max())
    return e / e.sum(axis=-1, keepdims=True)


register(
    Exercise(
        id="ch01.stable_softmax",
        number="1.2",
        title="stable softmax",
        points=2,
        hint="softmax does not change when you subtract the same number from every logit of a row",
        function="stable_softmax",
        description="Write the softmax over the last axis from scratch (numpy only), so that it "
        "never overflows: subtract each row's maximum before `exp`.",
        solution='''
            def stable_softmax(x):
                """Softmax over the last axis of x (any shape) that never overflows."""
                ### BEGIN SOLUTION
                shifted = x - x.max(axis=-1, keepdims=True)  # the largest entry becomes 0: exp cannot overflow
                e = np.exp(shifted)
                return e / e.sum(axis=-1, keepdims=True)  # (..., n) / (..., 1): each row sums to 1
                ### END SOLUTION
        ''',
        reference=lambda x: softmax(x),
        public_cases=_stable_cases,
        distributions=("result",),
        diagnoses=(
            Diagnosis(NO_MAX, variant=naive_softmax),
            Diagnosis(
                "subtracted the maximum of the whole array: a row far below it underflows to 0/0. "
                "Subtract each row's own maximum (axis=-1, keepdims=True)",
                variant=_global_max,
            ),
            Diagnosis(
                "normalised along the wrong axis: each row (the last axis) must sum to 1; use axis=-1",
                variant=_wrong_axis,
            ),
            Diagnosis(BROADCAST, error="could not be broadcast"),
        ),
    )
)


# ----------------------------------------------------------------------------- 1.3 entropy
def _entropy_reference(p):
    p = np.asarray(p, dtype=np.float64)
    terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return -terms.sum(axis=-1)


def _entropy_cases():
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25], [0.9, 0.05, 0.05], [0.3, 0.3, 0.4]])
    return (
        grouped(
            "values",
            Case("uniform over 4", p=np.full(4, 0.25)),
            Case("three distributions", p=p[:3]),
        )
        + grouped(
            "batch dimensions",
            Case("batch dimensions (2, 2, 3)", p=p.reshape(2, 2, 3)),
        )
        + grouped(
            "zero probabilities",
            Case("with zero probabilities", p=np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])),
        )
    )


def _entropy_log2(p):
    return _entropy_reference(p) / np.log(2)


register(
    Exercise(
        id="ch01.attention_entropy",
        number="1.3",
        title="entropy of attention weights",
        points=2,
        hint="0 * log(0) counts as 0; sum over the last axis",
        function="attention_entropy",
        description="The entropy $H(p) = -\\sum_i p_i \\log p_i$ (natural log) of each distribution "
        "along the last axis, with $0 \\log 0 = 0$. Uniform weights have the largest entropy, one-hot "
        "weights zero.",
        solution='''
            def attention_entropy(p):
                """Entropy -sum(p log p) in nats of each distribution along the last axis; 0 log 0 = 0."""
                ### BEGIN SOLUTION
                safe = np.where(p > 0, p, 1.0)  # log(1) = 0, so zero probabilities add nothing
                return -(p * np.log(safe)).sum(axis=-1)  # (..., n) -> (...)
                ### END SOLUTION
        ''',
        reference=_entropy_reference,
        public_cases=_entropy_cases,
        diagnoses=(
            Diagnosis(
                "p * log(p) is NaN where p = 0 (0 * -inf): treat those terms as 0, "
                "e.g. np.log(np.where(p > 0, p, 1.0))",
                variant=lambda p: -(p * np.log(p)).sum(axis=-1),
            ),
            Diagnosis(
                "you lost the minus sign: entropy is -sum(p log p), never negative",
                variant=lambda p: -_entropy_reference(p),
            ),
            Diagnosis(
                "used log base 2 (bits); this course measures entropy in nats: np.log", variant=_entropy_log2
            ),
            Diagnosis(
                "summed over the whole array: compute one entropy per distribution (sum over the last axis only)",
                variant=lambda p: _entropy_reference(p).sum() if np.ndim(p) > 1 else None,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 1.4 Jacobian
def _jacobian_reference(x):
    s = softmax(x)
    return np.diag(s) - np.outer(s, s)


def _jacobian_cases():
    rng = np.random.default_rng(104)
    return grouped(
        "values",
        Case("logits [1, 2, 3]", x=np.array([1.0, 2.0, 3.0])),
        Case("four equal logits", x=np.zeros(4)),
        Case("five random logits", x=rng.normal(size=5)),
    ) + grouped("large logits", Case("logits near 500", x=np.array([500.0, 501.0, 499.0])))


register(
    Exercise(
        id="ch01.softmax_jacobian",
        number="1.4",
        title="the softmax Jacobian",
        points=3,
        hint="dsoftmax_i/dx_j = s_i * (delta_ij - s_j)",
        function="softmax_jacobian",
        description="For a 1-d vector of logits `x` of length n, return the (n, n) matrix "
        "$J_{ij} = \\partial s_i / \\partial x_j = s_i(\\delta_{ij} - s_j)$ with $s = \\mathrm{softmax}(x)$.",
        solution='''
            def softmax_jacobian(x):
                """J[i, j] = d softmax(x)_i / d x_j for a 1-d x of length n: shape (n, n)."""
                ### BEGIN SOLUTION
                s = softmax(x)  # (n,)
                return np.diag(s) - np.outer(s, s)  # (n, n): s_i * (delta_ij - s_j)
                ### END SOLUTION
        ''',
        reference=_jacobian_reference,
        public_cases=_jacobian_cases,
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "missing the diagonal term: J = diag(s) - s s^T (s_i also depends on its own x_i directly)",
                variant=lambda x: -np.outer(softmax(x), softmax(x)),
            ),
            Diagnosis(
                "the signs are flipped: J = diag(s) - s s^T", variant=lambda x: -_jacobian_reference(x)
            ),
            Diagnosis(
                "built from the logits x instead of the probabilities s = softmax(x)",
                variant=lambda x: np.diag(x) - np.outer(x, x),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 1.5 logit gap (derive)
def _gap_cases():
    return grouped(
        "gaps",
        Case("p=0.9 among n=2", p=0.9, n=2),
        Case("several targets, n=10", p=np.array([0.5, 0.9, 0.99]), n=10),
        Case("p=1/n needs no gap; p=1/2 some", p=np.array([0.25, 0.5]), n=4),
    )


def _gap(p, n):
    p = np.asarray(p, dtype=np.float64)
    return np.log(p * (n - 1) / (1 - p))


register(
    Exercise(
        id="ch01.logit_gap",
        number="1.5",
        title="how big a margin wins the softmax",
        points=2,
        function="logit_gap",
        hint="solve p = e^c / (e^c + n - 1) for e^c first, then take the log",
        kind="derive",
        description="One logit is $c$ larger than the other $n - 1$, which are equal. Derive the gap "
        "$c$ for which the leader gets softmax weight `p` (with $1/n \\le p < 1$), and return it as a "
        "closed form in `p` and `n` (`p` may be an array). Start from "
        "$p = e^c / (e^c + n - 1)$.",
        solution='''
            def logit_gap(p, n):
                """The gap c by which one of n logits must exceed the others to get softmax weight p."""
                ### BEGIN SOLUTION
                # p = e^c / (e^c + n - 1)  =>  p (n - 1) = (1 - p) e^c  =>  c = log(p (n - 1) / (1 - p))
                return np.log(p * (n - 1) / (1 - p))
                ### END SOLUTION
        ''',
        reference=_gap,
        public_cases=_gap_cases,
        diagnoses=(
            Diagnosis(
                "that is the answer for n = 2 (the log-odds log(p / (1 - p))): the leader competes with "
                "n - 1 others, each contributing e^0 = 1 to the denominator",
                variant=lambda p, n: np.log(np.asarray(p) / (1 - np.asarray(p))) if n != 2 else None,
            ),
            Diagnosis(
                "the leader competes with the n - 1 others, not n: p = e^c / (e^c + n - 1)",
                variant=lambda p, n: np.log(np.asarray(p) * n / (1 - np.asarray(p))),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 1.6 overflow (predict)
register(
    Exercise(
        id="ch01.predict_overflow_logit",
        number="1.6",
        title="where the sum of a float32 softmax overflows",
        points=1,
        function="predict_overflow_logit",
        kind="predict",
        description="A naive float32 softmax (no maximum subtracted) gets a row of $n = 1000$ equal logits "
        "$x$. Each `np.exp(x)` is still finite, but the row's *sum* is not: above which $x$ does the sum "
        "overflow to `inf` (largest float32 is about $3.4 \\times 10^{38}$)? Return the number; anything "
        "within 1% passes.",
        solution='''
            def predict_overflow_logit():
                """The logit above which the sum of 1000 float32 exponentials overflows."""
                ### BEGIN SOLUTION
                # 1000 * exp(x) > 3.4e38  <=>  x > ln(3.4e38) - ln(1000), about 88.7 - 6.9
                return 88.72 - 6.91
                ### END SOLUTION
        ''',
        reference=lambda: np.log(float(np.finfo(np.float32).max)) - np.log(1000.0),
        public_cases=lambda: grouped("the number", Case("float32, a row of 1000 equal logits")),
        tolerance=(1e-2, 0.0),
        hint="the sum is 1000 * exp(x); when is that larger than the largest float32?",
        diagnoses=(
            Diagnosis(
                "that is where a single exp overflows; the sum of 1000 of them gets there sooner",
                name="one exp, not the sum",
                hint="1000 * exp(x) > 3.4e38 gives x > ln(3.4e38) - ln(1000)",
                variant=lambda: np.log(float(np.finfo(np.float32).max)),
            ),
            Diagnosis(
                "that is a float64 limit (its largest number is about 1.8e308)",
                name="float64's limit",
                hint="use float32's largest number, 3.4e38",
                variant=lambda: np.log(float(np.finfo(np.float64).max)) - np.log(1000.0),
            ),
            Diagnosis(
                "that is in base 10 (log10); exp is base e",
                name="log base 10",
                hint="x = ln(3.4e38 / 1000)",
                variant=lambda: np.log10(float(np.finfo(np.float32).max) / 1000.0),
            ),
        ),
    )
)
