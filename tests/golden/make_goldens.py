"""Write format_goldens.json by running format_cases.py against the reference SDK.

Run with the reference's venv (`pip install oracleagentmemory==26.8.0`, which imports without
a server): ``REF/bin/python tests/golden/make_goldens.py``. It observes the reference only from
outside: the text its public value types render for the cases below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))

from format_cases import cases  # noqa: E402

goldens = {}
for name, case in cases().items():
    try:
        goldens[name] = {"text": case()}
    except Exception as exc:  # a case the reference rejects is recorded as such
        goldens[name] = {"error": type(exc).__name__}
(here / "format_goldens.json").write_text(json.dumps(goldens, indent=1, sort_keys=True) + "\n")
print(f"{len(goldens)} goldens written")
