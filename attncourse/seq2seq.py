"""``attncourse.seq2seq`` lives in ``attncourse.models.seq2seq``; this path stays so saved notebooks keep working."""

import sys

from .models import seq2seq as _module

sys.modules[__name__] = _module
