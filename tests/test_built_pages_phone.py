"""Every built page as a reader sees it at phone width; the checks are in built_pages.py."""

from built_pages import *  # noqa: F403  (its tests and their fixtures)

VIEWPORT = (390, 844)
