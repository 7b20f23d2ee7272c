"""Chapter 1 exercises: softmax, temperature, overflow, entropy and the Jacobian."""

from __future__ import annotations

import numpy as np

from ... import softmax
from ..engine.method import WrittenDown
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register
from ._shared import BROADCAST, NO_MAX, naive_softmax

__all__: list = []

SOFTMAX_NEEDS = ("import numpy as np", "from attncourse import softmax")


# ----------------------------------------------------------------------------- 1.1 temperature
def _temperature_cases():
    rng = np.random.default_rng(101)
    return (
        grouped(
            "one temperature",
            Case("one row, temperature 0.5", logits=np.array([2.0, 1.0, 0.1]), temperature=0.5),
            Case("three rows, temperature 10", logits=rng.normal(size=(3, 4)), temperature=10.0),
        )
        + grouped(
            "a temperature per row",
            Case(
                "4 rows of 3, temperatures (4,)",
                logits=rng.normal(size=(4, 3)),
                temperature=np.array([0.5, 1.0, 2.0, 4.0]),
            ),
            Case(
                "3 rows of 3 (square), temperatures (3,)",
                logits=np.array([[3.0, 2.0, 1.0], [1.0, 1.5, 0.5], [0.0, 2.0, -2.0]]),
                temperature=np.array([0.25, 1.0, 8.0]),
            ),
        )
        + grouped(
            "batch dimensions",
            Case(
                "logits (2, 2, 3), temperatures (2, 2)",
                logits=rng.normal(size=(2, 2, 3)),
                temperature=np.array([[0.5, 2.0], [1.0, 3.0]]),
            ),
        )
        + grouped(
            "extreme temperatures",
            Case(
                "temperatures 0.001 and 1000: logits / T in the thousands",
                logits=np.array([[3.0, 2.0, 1.0], [1.0, 1.5, 0.5]]),
                temperature=np.array([0.001, 1000.0]),
            ),
        )
        + grouped(
            "greedy rows (temperature 0)",
            Case(
                "3 rows of 4, temperatures 0, 1, 0 (a near tie in the first row, a tie in the last)",
                logits=np.array([[0.5, 2.0, 1.9999, 1.5], [0.5, 2.0, -1.0, 1.5], [3.0, -2.0, 3.0, 1.0]]),
                temperature=np.array([0.0, 1.0, 0.0]),
            ),
        )
    )


def _per_row(logits, temperature, ties="split"):
    x = np.asarray(logits)
    t = np.asarray(temperature)[..., None]  # (...) -> (..., 1)
    greedy = t == 0
    p = softmax(x / np.where(greedy, 1, t))
    top = (x == x.max(axis=-1, keepdims=True)).astype(np.float64)
    if ties == "argmax":
        top = np.zeros(x.shape)
        np.put_along_axis(top, x.argmax(axis=-1)[..., None], 1.0, axis=-1)
    return np.where(greedy, top / top.sum(axis=-1, keepdims=True), p)


def _greedy(temperature):
    return bool(np.any(np.asarray(temperature) == 0))


def _by_column(logits, temperature):
    t = np.asarray(temperature)
    if t.ndim == 0 or t.shape[-1:] != np.shape(logits)[-1:] or _greedy(t):
        return None
    return softmax(logits / t)


def _argmax_ties(logits, temperature):
    x, t = np.asarray(logits), np.broadcast_to(np.asarray(temperature), np.shape(logits)[:-1])
    tied = ((x == x.max(axis=-1, keepdims=True)).sum(axis=-1) > 1) & (t == 0)
    return _per_row(logits, temperature, ties="argmax") if tied.any() else None


def _greedy_not_finite(outputs, logits, temperature):
    """A row of temperature 0 holds inf or NaN: the division by 0 ran.  True on a case without a
    greedy row, so that the expected result shows it too there (the mistake cannot show)."""
    if not _greedy(temperature):
        return True
    if len(outputs) != 1:
        return False
    out = np.asarray(outputs[0], dtype=np.float64)
    if out.shape != np.shape(logits):
        return False
    rows = np.broadcast_to(np.asarray(temperature) == 0, out.shape[:-1])
    return bool(np.any(~np.isfinite(out[rows])))


TEMPERATURE_BROADCAST = (
    "a broadcasting error: numpy lines shapes up from their last axis. Which shape must the "
    "temperatures take so that each one divides every logit of its own row, whatever the leading axes?"
)
PLAIN_NUMBER = (
    "one plain Python number as the temperature raised an error (a float cannot be indexed, reshaped "
    "or asked its shape): the prompt allows one number for every row. How can a number and an array "
    "of temperatures go through the same code?"
)


register(
    Exercise(
        id="ch01.temperature_softmax",
        number="1.1",
        title="one temperature per row, and greedy rows",
        points=1,
        hint="a temperature of shape (...) has to divide every logit of its own row: give it the row's last axis; "
        "a row at temperature 0 never divides at all",
        function="temperature_softmax",
        description="A decoder samples several sequences at once, each at its own temperature. Given "
        "`logits (..., n)` and `temperature`, either one number for every row or an array `(...)` "
        "holding one temperature per row (the logits' shape without its last axis), return the "
        "softmax over the last axis of each row divided by its own temperature, shape `(..., n)`. A "
        "temperature of 0 stands for greedy decoding: such a row is the limit of its softmax as its "
        "temperature falls to 0 (work out what that is, ties included). Other temperatures are positive.",
        solution='''
            def temperature_softmax(logits, temperature):
                """Softmax over the last axis of logits (..., n), each row divided by its temperature (...)."""
                ### BEGIN SOLUTION
                t = np.asarray(temperature)[..., None]  # (...) -> (..., 1): one number per row
                greedy = t == 0  # (..., 1): rows decoded greedily
                p = softmax(logits / np.where(greedy, 1, t))  # (..., n) / (..., 1); greedy rows divided by 1
                top = logits == logits.max(axis=-1, keepdims=True)  # (..., n): the row's largest logits
                return np.where(greedy, top / top.sum(axis=-1, keepdims=True), p)  # ties share the weight
                ### END SOLUTION
        ''',
        reference=_per_row,
        public_cases=_temperature_cases,
        distributions=("result",),
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "the temperatures divided the columns, not the rows: with n rows of n logits, an array of "
                "shape (n,) lines up with the last axis. Which axis of the logits is one temperature's?",
                name="temperatures along the last axis",
                variant=_by_column,
            ),
            Diagnosis(
                "multiplied by the temperature; divide the logits by it "
                "(a higher temperature must give a flatter distribution)",
                variant=lambda logits, t: None if _greedy(t) else softmax(logits * np.asarray(t)[..., None]),
            ),
            Diagnosis(
                NO_MAX,
                variant=lambda logits, t: None if _greedy(t) else naive_softmax(_per_row_logits(logits, t)),
            ),
            Diagnosis(
                "a row at temperature 0 holds inf or NaN: what does softmax(x / T) tend to as T falls to 0?",
                name="divided by a temperature of 0",
                hint="a greedy row is never divided: it puts its weight on its largest logit",
                symptom=_greedy_not_finite,
            ),
            Diagnosis(
                "a greedy row whose largest logit is tied put all its weight on one of the tied logits: "
                "the limit as T falls to 0 treats tied logits alike",
                name="ties broken by argmax",
                hint="split the weight equally among the logits equal to the row's maximum",
                variant=_argmax_ties,
            ),
            Diagnosis(
                TEMPERATURE_BROADCAST,
                name="temperatures do not broadcast over the rows",
                hint="an array of temperatures (...) needs a trailing axis of length 1: np.asarray(temperature)[..., None]",
                error="could not be broadcast|non-broadcastable|must match the size",
            ),
            Diagnosis(
                PLAIN_NUMBER,
                name="a plain-number temperature",
                hint="np.asarray(temperature) turns a float into a 0-d array, which takes [..., None] like any array",
                error="'float' object is not subscriptable|'float' object has no attribute|'int' object is not subscriptable",
            ),
        ),
    )
)


def _per_row_logits(logits, temperature):
    return logits / np.asarray(temperature)[..., None]


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
        "never overflows: subtract each row's maximum before `exp`. `x` has any shape `(..., n)`; "
        "return an array of the same shape.",
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


# ----------------------------------------------------------------------------- 1.3 temperature derivative
def _dT(logits, temperature, power=2, centred=True, weighted=True):
    x = np.asarray(logits, dtype=np.float64)
    p = softmax(x / temperature)
    if not centred:
        mean = 0.0
    elif weighted:
        mean = (p * x).sum(axis=-1, keepdims=True)
    else:
        mean = x.mean(axis=-1, keepdims=True)
    return -p * (x - mean) / temperature**power


def _dT_cases():
    rng = np.random.default_rng(103)
    return (
        grouped(
            "derivatives",
            Case("three logits, T = 1", logits=np.array([2.0, 1.0, 0.1]), temperature=1.0),
            Case("four logits, T = 0.5", logits=np.array([1.0, -1.0, 0.5, 0.0]), temperature=0.5),
            Case("rows (3, 5), T = 2", logits=rng.normal(size=(3, 5)), temperature=2.0),
        )
        + grouped(
            "batch dimensions",
            Case("batch dimensions (2, 2, 4), T = 1.5", logits=rng.normal(size=(2, 2, 4)), temperature=1.5),
        )
        + grouped(
            "large logits",
            Case(
                "logits near 1000, T = 0.4",
                logits=np.array([[1000.0, 1002.0, 1001.0], [-5.0, 0.0, 5.0]]),
                temperature=0.4,
            ),
        )
    )


register(
    Exercise(
        id="ch01.temperature_derivative",
        number="1.3",
        title="how fast the weights move with the temperature",
        points=2,
        function="temperature_derivative",
        hint="p depends on T only through z = x / T: chain the chapter's Jacobian with dz/dT",
        kind="derive",
        description="The chapter measured how the weights $p = \\operatorname{softmax}(x / T)$ "
        "change as the temperature $T$ moves, but never differentiated with respect to $T$. Derive "
        "$\\partial p_i / \\partial T$ in closed form and return it for logits `logits (..., n)` "
        "(softmax over the last axis) and one temperature `temperature > 0`: an array `(..., n)`. "
        "Logits may be in the thousands.",
        solution='''
            def temperature_derivative(logits, temperature):
                """d softmax(logits / T) / dT for logits (..., n) and one T > 0: shape (..., n)."""
                ### BEGIN SOLUTION
                x = logits - logits.max(axis=-1, keepdims=True)  # a shift changes nothing; keeps digits
                p = softmax(x / temperature)  # (..., n)
                # dp/dT = J dz/dT with z = x / T, dz/dT = -x / T^2, and J v = p * (v - p . v)
                mean = (p * x).sum(axis=-1, keepdims=True)  # (..., 1): the p-weighted mean logit
                return -p * (x - mean) / temperature**2  # (..., n)
                ### END SOLUTION
        ''',
        reference=_dT,
        public_cases=_dT_cases,
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "the signs are flipped: raising T must take weight from the largest logit, not give it more",
                variant=lambda x, t: -_dT(x, t),
            ),
            Diagnosis(
                "off by a factor T: how does z = x / T change with T?",
                name="1/T instead of 1/T^2",
                variant=lambda x, t: _dT(x, t, power=1) if t != 1 else None,
            ),
            Diagnosis(
                "the derivatives of a row do not sum to 0, yet the weights always sum to 1: "
                "something must be subtracted from each logit",
                variant=lambda x, t: _dT(x, t, centred=False),
            ),
            Diagnosis(
                "you subtracted the plain mean of the logits; the weights decide which mean",
                variant=lambda x, t: _dT(x, t, weighted=False),
            ),
            Diagnosis(NO_MAX, variant=lambda x, t: _dT_naive(x, t)),
        ),
    )
)


def _dT_naive(logits, temperature):
    with np.errstate(all="ignore"):
        e = np.exp(logits / temperature)
        p = e / e.sum(axis=-1, keepdims=True)
        return -p * (logits - (p * logits).sum(axis=-1, keepdims=True)) / temperature**2


# ----------------------------------------------------------------------------- 1.4 entropy gradient
def _grad_H(x, sign=1.0, centred=True):
    x = np.asarray(x, dtype=np.float64)
    p = softmax(x)
    log_p = np.log(np.where(p > 0, p, 1.0))  # p = 0 (a -inf logit) adds nothing
    H = -(p * log_p).sum(axis=-1, keepdims=True)
    return sign * -p * (log_p + H) if centred else sign * -p * log_p


def _grad_H_cases():
    rng = np.random.default_rng(104)
    return (
        grouped(
            "gradients",
            Case("logits [2, 1, 0.1]", x=np.array([2.0, 1.0, 0.1])),
            Case("rows (3, 4)", x=rng.normal(size=(3, 4))),
            Case("two equal leaders", x=np.array([1.0, 1.0, 0.0, -0.5])),
        )
        + grouped("batch dimensions", Case("batch dimensions (2, 3, 3)", x=rng.normal(size=(2, 3, 3))))
        + grouped(
            "large and masked logits",
            Case("logits near 1000", x=np.array([[1000.0, 1001.0, 999.0], [3.0, -1000.0, 1.0]])),
            Case(
                "a -inf logit (a masked key)",
                x=np.array([[1.0, -np.inf, 0.0, 2.0], [0.5, 0.5, -np.inf, 0.0]]),
            ),
        )
    )


def _grad_wrt_p(x):
    p = softmax(np.asarray(x, dtype=np.float64))
    return -(np.log(np.where(p > 0, p, 1.0)) + 1.0)


register(
    Exercise(
        id="ch01.entropy_gradient",
        number="1.4",
        title="the gradient of the entropy",
        points=3,
        function="entropy_gradient",
        hint="the chain rule: dH/dp first, then the chapter's backward formula through the softmax",
        kind="derive",
        description="A regulariser that keeps attention from collapsing onto one key adds the "
        "entropy $H(\\operatorname{softmax}(x))$ (in nats) to the loss, so training needs "
        "$\\partial H / \\partial x$, the gradient with respect to the logits. Derive it and return "
        "it for logits `x (..., n)` (softmax over the last axis): an array of `x`'s shape. Logits may "
        "be in the thousands, and a logit of $-\\infty$ (a masked key) must get gradient 0.",
        solution='''
            def entropy_gradient(x):
                """dH/dx for H = entropy (nats) of softmax(x) over the last axis; x (..., n) -> (..., n)."""
                ### BEGIN SOLUTION
                p = softmax(x)  # (..., n)
                log_p = np.log(np.where(p > 0, p, 1.0))  # masked keys (p = 0) contribute 0
                H = -(p * log_p).sum(axis=-1, keepdims=True)  # (..., 1)
                # dH/dp = -(log p + 1); through the softmax: p * (g - p . g) = -p * (log p + H)
                return -p * (log_p + H)
                ### END SOLUTION
        ''',
        reference=_grad_H,
        public_cases=_grad_H_cases,
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "the signs are flipped: this gradient points to lower entropy",
                variant=lambda x: _grad_H(x, sign=-1.0),
            ),
            Diagnosis(
                "this is dH/dp, the gradient with respect to the weights; the logits sit one softmax below",
                variant=_grad_wrt_p,
            ),
            Diagnosis(
                "a row's gradient does not sum to 0, yet adding one number to every logit changes nothing: "
                "the softmax's Jacobian has a second term",
                variant=lambda x: _grad_H(x, centred=False),
            ),
            Diagnosis(
                "NaN at a masked key: p log p is 0 * -inf there. What is the limit of p log p as p -> 0?",
                name="NaN at a masked key",
                variant=lambda x: _grad_H_nan(x),
            ),
            Diagnosis(NO_MAX, variant=lambda x: _grad_H_naive(x)),
        ),
    )
)


def _grad_H_nan(x):
    x = np.asarray(x, dtype=np.float64)
    if np.isfinite(x).all():
        return None
    with np.errstate(all="ignore"):
        p = softmax(x)
        log_p = np.log(p)
        return -p * (log_p - (p * log_p).sum(axis=-1, keepdims=True))


def _grad_H_naive(x):
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        e = np.exp(x)
        p = e / e.sum(axis=-1, keepdims=True)
        log_p = np.log(np.where(p > 0, p, 1.0))
        return -p * (log_p - (p * log_p).sum(axis=-1, keepdims=True))


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
        hint="write the leader's weight with the other logits at 0 (a shift changes nothing), then solve for e^c",
        kind="derive",
        description="One logit is $c$ larger than the other $n - 1$, which are equal. Derive the gap "
        "$c$ for which the leader gets softmax weight `p` (with $1/n \\le p < 1$), and return it as a "
        "closed form in `p` and `n` (`p` may be an array).",
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
                "your gap does not change with n: how many logits does the leader compete with?",
                name="n left out",
                hint="each of the n - 1 other logits adds e^0 = 1 to the softmax's denominator",
                variant=lambda p, n: np.log(np.asarray(p) / (1 - np.asarray(p))) if n != 2 else None,
            ),
            Diagnosis(
                "your gap is the one for a leader among n + 1 logits: count the others again",
                name="n others instead of n - 1",
                hint="the leader is one of the n logits",
                variant=lambda p, n: np.log(np.asarray(p) * n / (1 - np.asarray(p))),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 1.6 overflow (predict)
class _NoArrays(WrittenDown):
    """1.6's answer is a number written down: building even one row of 1000 float32 logits (4 kB) scores 0.

    numpy's arrays are seen (``tracemalloc``); torch's own allocator is not, a limit of the rule."""

    LIMIT = 4000  # bytes: below one row of 1000 float32 numbers; numpy's first finfo call takes ~1 kB

    def verdict(self, fn, args, arrays):
        peak = self.memory.stop()
        if peak > self.LIMIT:
            return (
                f"method rule broken: a prediction is written down, not computed, but your answer "
                f"allocated {peak} bytes of arrays to find it"
            )
        return None


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
        method=lambda: _NoArrays(),
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
