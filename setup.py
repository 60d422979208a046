"""Builds the trace recorder's row appender (luisa_nb/recording/_row_appender.c), the
runtime's report of a submission (luisa_nb/runtime/_submission_fields.c), its traced
uploads into real luisa-python buffers (luisa_nb/runtime/_luisa_uploads.c) and the BVH
builder of acceleration structures (luisa_nb/runtime/_bvh_builder.c) in C where a C
compiler, Python's headers and numpy's (a build requirement) exist; without them luisa_nb
installs and runs with the same code in Python (luisa_nb/recording/row_appender.py,
report_submitted in luisa_nb/runtime/commands.py, Instrumentation.upload in
luisa_nb/runtime/real_luisa.py, build_bvh_numpy in luisa_nb/runtime/bvh.py). Everything
else is in pyproject.toml."""

from setuptools import Extension, setup

try:
    import numpy
except ImportError:  # built without build isolation, where numpy is missing: no C code
    extensions = []
else:
    extensions = [
        Extension(
            "luisa_nb.recording._row_appender",
            ["luisa_nb/recording/_row_appender.c"],
            include_dirs=[numpy.get_include()],
            depends=[
                "luisa_nb/recording/slot_objects.h",
                "luisa_nb/recording/trace_clock.h",
                "luisa_nb/recording/weak_references.h",
            ],
            optional=True,
        ),
        Extension(
            "luisa_nb.runtime._submission_fields",
            ["luisa_nb/runtime/_submission_fields.c"],
            include_dirs=[numpy.get_include()],
            depends=[
                "luisa_nb/recording/slot_objects.h",
                "luisa_nb/recording/weak_references.h",
                "luisa_nb/runtime/array_memos.h",
            ],
            optional=True,
        ),
        Extension(
            "luisa_nb.runtime._luisa_uploads",
            ["luisa_nb/runtime/_luisa_uploads.c"],
            include_dirs=[numpy.get_include()],
            depends=[
                "luisa_nb/recording/slot_objects.h",
                "luisa_nb/recording/trace_clock.h",
                "luisa_nb/recording/weak_references.h",
                "luisa_nb/runtime/array_memos.h",
            ],
            optional=True,
        ),
        Extension(
            "luisa_nb.runtime._bvh_builder",
            ["luisa_nb/runtime/_bvh_builder.c"],
            # numpy's float arithmetic rounds every product and sum: so must the builder;
            # -O3 built 20,000 triangles ~15% faster than -O2
            extra_compile_args=["-O3", "-ffp-contract=off"],
            optional=True,
        ),
    ]

setup(ext_modules=extensions)
