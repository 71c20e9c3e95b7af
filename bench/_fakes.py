"""The test fakes (tests/fakes) for benchmarks, imported the way pytest imports them.

pytest puts ``tests/`` on the import path (``pythonpath = ["tests"]``), and the fakes
import each other as ``fakes.*``; ``python -m bench.<name>`` does not, so this does.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fakes.open_meteo import FakeOpenMeteo
from fakes.responses_api import Body, FakeOpenAI, Step, call, calls, text
from fakes.serving import serving

__all__ = ["Body", "FakeOpenAI", "FakeOpenMeteo", "Step", "call", "calls", "serving", "text"]
