"""``attncourse.transformer`` lives in ``attncourse.models.transformer``; this path stays so saved notebooks keep working."""

import sys

from .models import transformer as _module

sys.modules[__name__] = _module
