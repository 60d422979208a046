"""luisa-python's ``luisa.util``."""

from luisa_nb.luisa.missing import MISSING

RandomSampler = MISSING["RandomSampler"]
make_random_sampler = MISSING["make_random_sampler"]
make_random_sampler3d = MISSING["make_random_sampler3d"]

__all__ = ["RandomSampler", "make_random_sampler", "make_random_sampler3d"]
