"""Every built page as a reader sees it at desktop width; the checks are in built_pages.py.

axe audits every page at phone width (test_built_pages_phone.py); here it audits the three pages
that stand for the rest.  Every page is one template around its article: what desktop width adds
is the template's own (the navigation and contents sidebars, the wider header), the same on every
page, and the article's colours and markup are the ones audited at phone width."""

from built_pages import *  # noqa: F403  (its tests and their fixtures)

VIEWPORT = (1280, 900)
AUDITED = ("book/03_scaling.html", "book/appendix_glossary.html", "book/intro.html")
