"""Builds the recorder's C core (luisa_nb/recording/_recorder_core.c) where a C compiler,
Python's headers and numpy's (a build requirement) exist; without them luisa_nb installs
and runs with the same hooks in Python (luisa_nb/recording/recorder_core.py). Everything
else is in pyproject.toml."""

from setuptools import Extension, setup

try:
    import numpy
except ImportError:  # built without build isolation, where numpy is missing: no C core
    extensions = []
else:
    extensions = [
        Extension(
            "luisa_nb.recording._recorder_core",
            ["luisa_nb/recording/_recorder_core.c"],
            include_dirs=[numpy.get_include()],
            optional=True,
        )
    ]

setup(ext_modules=extensions)
