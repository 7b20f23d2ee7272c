"""Chapter 1 exercises: softmax, temperature, overflow, entropy and the Jacobian."""

from __future__ import annotations

import numpy as np

from ... import softmax
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
        "temperature falls to 0 (work out what that is, ties included). Other temperatures are positive; "
        "every logit is a finite number.",
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
        description="Write the softmax over the last axis from scratch (numpy only). `x` has any "
        "shape `(..., n)` and dtype float16, float32 or float64, and its logits are not tame: a row "
        "may lie in the thousands, far above or far below 0, next to a row of small ones, and an "
        "entry may be `-inf` (a key that must get weight 0), though never every entry of a row. "
        "Every row must come back as finite weights that sum to 1, as the exact softmax gives them; "
        "return an array of `x`'s shape.",
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


# ----------------------------------------------------------------------------- 1.5 attention KL
def _log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


def _kl(teacher, student, reverse=False, cross=False):
    """KL(softmax(teacher) || softmax(student)) per row, in float64 from the inputs' values."""
    if reverse:
        teacher, student = student, teacher
    lt, ls = _log_softmax(teacher), _log_softmax(student)
    p = np.exp(lt)
    kept = p > 0  # a key neither row may see (-inf in both) adds nothing
    with np.errstate(invalid="ignore"):
        inner = np.where(kept, -ls if cross else lt - ls, 0.0)
    return (p * inner).sum(axis=-1)


def _kl_cases():
    rng = np.random.default_rng(105)
    return (
        grouped(
            "values",
            Case("one row of three", teacher=np.array([2.0, 1.0, 0.1]), student=np.array([0.5, 2.0, -1.0])),
            Case("rows (4, 5)", teacher=rng.normal(size=(4, 5)), student=rng.normal(size=(4, 5)) * 2),
        )
        + grouped(
            "batch dimensions",
            Case(
                "batch dimensions (2, 3, 4)",
                teacher=rng.normal(size=(2, 3, 4)),
                student=rng.normal(size=(2, 3, 4)),
            ),
        )
        + grouped(
            "scores far apart",
            Case(
                "float32, scores near 1000; the student 200 below the teacher on one key",
                teacher=np.array([[0.0, 0.0], [1000.0, 1000.0]], dtype=np.float32),
                student=np.array([[0.0, -200.0], [1000.0, 800.0]], dtype=np.float32),
            ),
            Case(
                "float64, the student 800 below on one key",
                teacher=np.array([0.0, 0.0, 1.0]),
                student=np.array([0.0, -800.0, 1.0]),
            ),
            Case(
                "float32, the teacher 200 below on one key",
                teacher=np.array([0.0, -200.0, 1.0], dtype=np.float32),
                student=np.array([0.0, 0.0, 1.0], dtype=np.float32),
            ),
        )
        + grouped(
            "masked keys",
            Case(
                "a key masked with -inf in both rows",
                teacher=np.array([[1.0, -np.inf, 0.0, 2.0], [-np.inf, 0.5, 0.5, 0.0]]),
                student=np.array([[0.0, -np.inf, 1.0, 1.0], [-np.inf, 2.0, -1.0, 0.0]]),
            ),
        )
    )


def _kl_through_weights(teacher, student):
    with np.errstate(all="ignore"):
        p, q = softmax(np.asarray(teacher, dtype=np.float64)), softmax(np.asarray(student, dtype=np.float64))
        if np.asarray(teacher).dtype == np.float32:
            p, q = softmax(np.asarray(teacher)), softmax(np.asarray(student))
        return (p * np.log(p / q)).sum(axis=-1)


def _kl_not_finite(outputs, teacher, student):
    """A row's KL is inf or NaN where the true KL is finite (it always is here)."""
    if len(outputs) != 1:
        return False
    out = np.asarray(outputs[0], dtype=np.float64)
    return out.shape == np.shape(teacher)[:-1] and bool(np.any(~np.isfinite(out)))


def _kl_masked_nan(teacher, student):
    if np.isfinite(np.asarray(teacher)).all():
        return None
    with np.errstate(all="ignore"):
        lt, ls = _log_softmax(teacher), _log_softmax(student)
        return (np.exp(lt) * (lt - ls)).sum(axis=-1)


register(
    Exercise(
        id="ch01.attention_kl",
        number="1.5",
        title="how far a student's attention is from its teacher's",
        points=3,
        function="attention_kl",
        hint="work with the log-weights themselves, never with a weight that may have rounded to 0; "
        "a key with weight 0 in the teacher adds nothing",
        description="A small model is trained to attend like a large one: each of its queries is "
        "penalised by the Kullback-Leibler divergence $\\mathrm{KL}(p \\,\\|\\, q) = \\sum_i p_i \\log (p_i / q_i)$ "
        "(in nats) of its weights $q = \\operatorname{softmax}(s)$ from the teacher's weights "
        "$p = \\operatorname{softmax}(t)$, softmax over the last axis. Given the scores `teacher (..., n)` and "
        "`student (..., n)`, of one shape and one dtype (float32 or float64), return the KL of each row, "
        "shape `(...)`. Scores may be in the thousands and the two rows may disagree by hundreds: the result "
        "must be finite and right wherever the true KL is. A key masked with $-\\infty$ is masked in both "
        "rows; no row is masked entirely.",
        solution='''
            def attention_kl(teacher, student):
                """KL(softmax(teacher) || softmax(student)) of each row; (..., n) -> (...)."""
                ### BEGIN SOLUTION
                def log_softmax(x):  # x - logsumexp(x): finite wherever x is
                    m = x.max(axis=-1, keepdims=True)
                    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))

                log_p, log_q = log_softmax(teacher), log_softmax(student)
                p = np.exp(log_p)  # (..., n); 0 at a masked key
                kept = p > 0  # a masked key adds nothing, and -inf - (-inf) is never computed
                terms = np.where(kept, log_p, 0.0) - np.where(kept, log_q, 0.0)
                return (p * terms).sum(axis=-1)  # (...)
                ### END SOLUTION
        ''',
        reference=_kl,
        public_cases=_kl_cases,
        needs=SOFTMAX_NEEDS,
        forbids=("torch.nn.functional.kl_div", "torch.nn.KLDivLoss"),
        diagnoses=(
            Diagnosis(
                "this is the KL the other way round, of the teacher's weights from the student's: "
                "the KL is not symmetric. Whose weights weight the sum?",
                name="KL the wrong way round",
                hint="the teacher's weights p weight the sum: sum_i p_i (log p_i - log q_i)",
                variant=lambda t, s: _kl(t, s, reverse=True),
            ),
            Diagnosis(
                "your value exceeds the KL by an amount that depends on the teacher's row alone",
                name="cross-entropy, not KL",
                hint="KL(p || q) = sum_i p_i log p_i - sum_i p_i log q_i",
                variant=lambda t, s: _kl(t, s, cross=True),
            ),
            Diagnosis(
                "NaN in a row with a masked key: what does a key that neither model may see add to the KL?",
                name="NaN at a masked key",
                hint="leave out the keys whose teacher weight is 0",
                variant=_kl_masked_nan,
            ),
            Diagnosis(
                "a row's KL came out inf or NaN where the true KL is finite: a weight that rounded to 0 "
                "went into a log or a division, though its score is finite",
                name="a weight that underflowed went into a log",
                hint="log softmax(x) = x - logsumexp(x), computed with the row's maximum subtracted, "
                "never forms the tiny weight",
                variant=_kl_through_weights,
            ),
            Diagnosis(
                "a row's KL is inf or NaN, yet every true KL here is finite: which of your intermediate "
                "values rounded to 0, or met -inf - (-inf)?",
                name="inf or NaN in a row",
                symptom=_kl_not_finite,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 1.6 log-sigmoid
def _log_sigmoid(z):
    z = np.asarray(z, dtype=np.float64)
    return -np.logaddexp(0.0, -z)


def _log_sigmoid_cases():
    rng = np.random.default_rng(106)
    return (
        grouped(
            "moderate scores",
            Case("five scores in [-4, 4]", z=np.array([-4.0, -1.0, 0.0, 0.5, 4.0])),
            Case("scores (3, 4)", z=rng.normal(size=(3, 4)) * 3),
        )
        + grouped(
            "very negative scores",
            Case("float64 scores down to -1000", z=np.array([-1000.0, -750.0, -40.0, -1.0])),
            Case("float32 scores down to -120", z=np.array([-120.0, -95.0, -20.0, -2.0], dtype=np.float32)),
        )
        + grouped(
            "very positive scores",
            Case("float64 scores up to 1000", z=np.array([1.0, 40.0, 750.0, 1000.0])),
            Case("float32 scores up to 120", z=np.array([[20.0, 95.0], [120.0, 2.0]], dtype=np.float32)),
        )
    )


def _log_sigmoid_naive(z):
    with np.errstate(all="ignore"):
        return np.log(1.0 / (1.0 + np.exp(-np.asarray(z))))


def _log_sigmoid_via_exp_z(z):
    with np.errstate(all="ignore"):
        z = np.asarray(z)
        return z - np.log1p(np.exp(z))


register(
    Exercise(
        id="ch01.log_sigmoid",
        number="1.6",
        title="the log-probability of a yes",
        points=2,
        function="log_sigmoid",
        hint="a yes/no choice from one score is a softmax over two scores; the chapter's log-softmax then applies",
        description="A binary classifier, or a gate, turns one score $z$ into the probability of a *yes*, "
        "$\\sigma(z) = 1 / (1 + e^{-z})$, and its training loss needs $\\log \\sigma(z)$. Given scores `z` "
        "of any shape, float32 or float64, return $\\log \\sigma(z)$ elementwise, an array of `z`'s shape. "
        "Scores lie anywhere in $[-1000, 1000]$: the result must be finite and right wherever the true "
        "value is.",
        solution='''
            def log_sigmoid(z):
                """log(1 / (1 + e^(-z))) elementwise, finite for every finite z."""
                ### BEGIN SOLUTION
                # sigma(z) = e^z / (e^z + e^0): the weight of z in a softmax over (z, 0)
                m = np.maximum(z, 0)  # the larger of the two scores
                return z - m - np.log(np.exp(z - m) + np.exp(-m))  # z - logsumexp(z, 0)
                ### END SOLUTION
        ''',
        reference=_log_sigmoid,
        public_cases=_log_sigmoid_cases,
        forbids=(
            "torch.nn.functional.logsigmoid",
            "torch.nn.LogSigmoid",
            "torch.nn.functional.softplus",
            "torch.nn.Softplus",
        ),
        diagnoses=(
            Diagnosis(
                "-inf (or NaN) for a very negative score, where log sigma(z) is finite: e^(-z) overflowed",
                name="overflow for very negative scores",
                hint="sigma(z) is the weight of z in a softmax over the two scores (z, 0); subtract their maximum",
                variant=_log_sigmoid_naive,
            ),
            Diagnosis(
                "-inf (or NaN) for a very positive score, where log sigma(z) is close to 0: e^z overflowed",
                name="overflow for very positive scores",
                hint="sigma(z) is the weight of z in a softmax over the two scores (z, 0); subtract their maximum",
                variant=_log_sigmoid_via_exp_z,
            ),
            Diagnosis(
                "this is the log-probability of a no, log(1 - sigma(z)): check the sign of the exponent",
                name="the log-probability of a no",
                hint="sigma(z) = 1 / (1 + e^(-z)) grows with z",
                variant=lambda z: _log_sigmoid(-np.asarray(z)),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 1.7 smooth maximum (derive)
def _smooth_max_slope(x, temperature, part="whole"):
    """d/dT of T logsumexp(x / T) per row, in float64 from the inputs' values."""
    z = np.asarray(x, dtype=np.float64) / temperature
    log_p = _log_softmax(z)
    p = np.exp(log_p)
    with np.errstate(invalid="ignore"):
        H = -np.where(p > 0, p * log_p, 0.0).sum(axis=-1)  # a masked entry (p = 0) adds nothing
    if part == "lse":  # the product rule's first term alone
        m = z.max(axis=-1, keepdims=True)
        return (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))[..., 0]
    return -H if part == "flipped" else H


def _smooth_max_cases():
    rng = np.random.default_rng(107)
    return (
        grouped(
            "slopes",
            Case("three scores, T = 1", x=np.array([2.0, 1.0, 0.1]), temperature=1.0),
            Case("rows (3, 5), T = 0.5", x=rng.normal(size=(3, 5)), temperature=0.5),
            Case("batch dimensions (2, 2, 4), T = 3", x=rng.normal(size=(2, 2, 4)), temperature=3.0),
        )
        + grouped(
            "large scores and small temperatures",
            Case(
                "scores near 1000, T = 0.25",
                x=np.array([[1000.0, 1000.5, 999.0], [-800.0, -799.5, -801.0]]),
                temperature=0.25,
            ),
            Case("a tie at the top, T = 0.001", x=np.array([3.0, 3.0, 1.0, 2.9]), temperature=0.001),
        )
        + grouped(
            "masked entries",
            Case(
                "-inf entries, T = 2",
                x=np.array([[1.0, -np.inf, 0.0, 2.0], [-np.inf, 0.5, 0.5, -np.inf]]),
                temperature=2.0,
            ),
        )
    )


def _smooth_max_naive(x, temperature):
    with np.errstate(all="ignore"):
        z = np.asarray(x, dtype=np.float64) / temperature
        e = np.exp(z)
        p = e / e.sum(axis=-1, keepdims=True)
        return -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(axis=-1)


register(
    Exercise(
        id="ch01.smooth_max_slope",
        number="1.7",
        title="how the smooth maximum moves with the temperature",
        points=2,
        function="smooth_max_slope",
        kind="derive",
        hint="differentiate the product T * logsumexp(x / T); the chapter gives the derivative of log-sum-exp",
        description="The *smooth maximum* $m_T(x) = T \\log \\sum_i e^{x_i / T}$ of scores $x$ tends to "
        "$\\max_i x_i$ as the temperature $T$ falls to 0, and is a differentiable stand-in for the maximum. "
        "Derive $\\partial m_T / \\partial T$ in closed form and return it for scores `x (..., n)` (over the "
        "last axis) and one temperature `temperature > 0`: an array `(...)`, one number per row. Scores may "
        "be in the thousands, temperatures as small as 0.001, and an entry may be $-\\infty$ (no row is "
        "$-\\infty$ entirely).",
        solution='''
            def smooth_max_slope(x, temperature):
                """d/dT of T log sum_i exp(x_i / T), one number per row of x (..., n)."""
                ### BEGIN SOLUTION
                z = x / temperature
                log_p = z - z.max(axis=-1, keepdims=True)
                log_p = log_p - np.log(np.exp(log_p).sum(axis=-1, keepdims=True))  # z - logsumexp(z)
                p = np.exp(log_p)  # softmax(x / T); 0 at a -inf entry
                # d/dT [T lse(z)] = lse(z) - p . z = -sum_i p_i log p_i; a -inf entry (p = 0) adds 0
                return -(p * np.where(p > 0, log_p, 0.0)).sum(axis=-1)
                ### END SOLUTION
        ''',
        reference=_smooth_max_slope,
        public_cases=_smooth_max_cases,
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "the signs are flipped: raising the temperature lifts the smooth maximum further above the maximum",
                name="sign flipped",
                variant=lambda x, t: _smooth_max_slope(x, t, part="flipped"),
            ),
            Diagnosis(
                "only the first term of the product rule: T itself also multiplies something that depends on T",
                name="the product rule's first term alone",
                variant=lambda x, t: _smooth_max_slope(x, t, part="lse"),
            ),
            Diagnosis(NO_MAX, variant=_smooth_max_naive),
        ),
    )
)
