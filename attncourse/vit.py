"""``attncourse.vit`` lives in ``attncourse.models.vit``; this path stays so saved notebooks keep working."""

import sys

from .models import vit as _module

sys.modules[__name__] = _module
