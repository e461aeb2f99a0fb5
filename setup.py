"""Packages and their folders for setuptools; everything else is in pyproject.toml.

One package goes into site-packages, transformer_explorer, holding core/, gui/, resources/ and docs/ under their
short names; at start-up it puts its own folder first on sys.path (transformer_explorer/__init__.py), so no
other distribution's `core`, `gui` or `resources` can shadow the app's or delete them on uninstall. The
source keeps those folders at the top of the repository, so `python main.py` needs no installation.
"""

from setuptools import find_namespace_packages, find_packages, setup

PACKAGE = "transformer_explorer"
CODE = ("core", "gui")
# Data folders: every file in them ships. docs/ is the user guide that Help > User guide opens.
DATA = ("resources", "docs")


def under(top: str, names: list[str]) -> list[str]:
    return [f"{PACKAGE}.{top}"] + [f"{PACKAGE}.{top}.{name}" for name in names]


packages = [PACKAGE]
for top in CODE:
    packages += under(top, find_packages(top))
data_packages = [name for top in DATA for name in under(top, find_namespace_packages(top, exclude=["*__pycache__*"]))]

setup(
    packages=packages + data_packages,
    package_dir={PACKAGE: PACKAGE, **{f"{PACKAGE}.{top}": top for top in (*CODE, *DATA)}},
    package_data={name: ["*"] for name in data_packages},
    exclude_package_data={"": ["*.pyc"]},
)
