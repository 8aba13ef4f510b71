"""Build hook: the wheel carries the demo sample (data/sample) and the example files (examples/) as package data
under replay/_data/, where replay.cli.bundled finds them when replay is installed outside a checkout."""

from pathlib import Path
from shutil import copytree

from setuptools import setup
from setuptools.command.build_py import build_py

BUNDLED = {"sample": Path("data") / "sample", "examples": Path("examples")}


class BuildWithData(build_py):
    """build_py, then copy each bundled folder into the built package (an editable install reads the checkout)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for name, source in BUNDLED.items():
            if not source.is_dir():
                raise FileNotFoundError(f"{source}: missing from the source tree; the wheel must carry it")
            copytree(source, Path(self.build_lib) / "replay" / "_data" / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithData})
