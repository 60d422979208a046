"""Builds the trace recorder's row appender in C (luisa_nb/recording/_row_appender.c) where
a C compiler, Python's headers and numpy's (a build requirement) exist; without them
luisa_nb installs and runs with the same hooks in Python (luisa_nb/recording/row_appender.py).
Everything else is in pyproject.toml."""

from setuptools import Extension, setup

try:
    import numpy
except ImportError:  # built without build isolation, where numpy is missing: no C appender
    extensions = []
else:
    extensions = [
        Extension(
            "luisa_nb.recording._row_appender",
            ["luisa_nb/recording/_row_appender.c"],
            include_dirs=[numpy.get_include()],
            optional=True,
        )
    ]

setup(ext_modules=extensions)
