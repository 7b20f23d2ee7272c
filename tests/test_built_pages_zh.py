"""Every page of the zh edition at phone width (the checks are in built_pages.py); axe audits the
three pages that stand for the rest (their markup is the English pages', with the text translated)."""

from built_pages import *  # noqa: F403  (its tests and their fixtures)

EDITION = "zh"
VIEWPORT = (390, 844)
AUDITED = ("book/03_scaling.html", "book/appendix_glossary.html", "book/intro.html")
