"""Each chapter's exercises, one module a chapter, named for it; importing one registers its exercises.

A new chapter adds a module here and its name below; it touches no file of ``engine``.
"""

from . import bugs, ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch12, ch13  # noqa: F401

__all__: list = []
