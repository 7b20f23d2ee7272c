"""The judge, apart from what it judges: it knows nothing of any chapter.

Read in the order a check runs: ``registry`` (what an exercise is), ``guard`` and ``method`` (what
an answer may call and how it must work), ``outputs`` (what it returned, as plain arrays),
``tolerance`` and ``compare`` (how close to the reference), ``scoring`` (groups, all or nothing),
``check`` (the pass that runs them in order and writes the feedback).  ``notebook`` and ``sync``
turn the registry into a chapter's cells and student edition.
"""
