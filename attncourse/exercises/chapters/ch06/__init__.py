"""Chapter 6's exercises, in two modules read in order: ``building_masks`` (6.1-6.5) and
``attention_under_masks`` (6.6-6.10)."""

from . import attention_under_masks, building_masks  # noqa: F401

__all__: list = []
