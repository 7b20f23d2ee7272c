"""Chapter 6's exercises, in three modules: ``building_masks`` (6.1-6.5), ``attention_under_masks``
(6.6-6.9) and ``kv_cache_masks`` (6.10)."""

from . import attention_under_masks, building_masks, kv_cache_masks  # noqa: F401

__all__: list = []
