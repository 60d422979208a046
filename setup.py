"""Builds the recorder's C core (luisa_nb/recording/_recorder_core.c) where a C compiler
and Python's headers exist; without them luisa_nb installs and runs with the same hooks in
Python (luisa_nb/recording/recorder_core.py). Everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "luisa_nb.recording._recorder_core",
            ["luisa_nb/recording/_recorder_core.c"],
            optional=True,
        )
    ]
)
