"""What each exercise's prompt promises about its inputs, one module per chapter (``chNN.py``,
``bugs.py``), so that ``tests/test_case_promises.py`` can hold every case, public and hidden, to it.

Each module defines ``PROMISES``: exercise id -> a function of one case's inputs (a dict, name ->
value, as ``Case.inputs``) that returns the list of ways the case breaks the prompt (empty when
it obeys).  Write the function from the prompt the student reads, not from the cases: dtypes,
value kinds (finite, ``-inf`` allowed, integers, booleans), shapes and ranges the prompt states.
``_rules`` holds the checks several chapters use.
"""
