"""Files replay ships beside its code: the demo sample and the example policy and sweep files.

An installed wheel carries them under ``replay/_data/`` (setup.py copies them there); a checkout has them at
``data/sample`` and ``examples/``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from replay.errors import ReplayError

CHECKOUT = {"sample": Path("data") / "sample", "examples": Path("examples")}


def bundled(name: str) -> Path:
    """The folder of bundled files ``name`` (sample or examples): the installed package's, else the checkout's."""
    if name not in CHECKOUT:
        raise ValueError(f"bundled: {name!r} is not one of {', '.join(CHECKOUT)}")
    installed = Path(str(resources.files("replay"))) / "_data" / name
    if installed.is_dir():
        return installed
    checkout = Path(__file__).resolve().parents[2] / CHECKOUT[name]
    if checkout.is_dir():
        return checkout
    raise ReplayError(
        f"the bundled {name} is missing: neither {installed} (an installed wheel) nor {checkout} "
        "(a checkout) exists; reinstall replay (`pip install replay`) or run from a checkout"
    )
