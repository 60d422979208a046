"""``metal``: a simulation of LuisaCompute's Metal backend.

Uploads are copied into a staging pool when the command buffer is encoded (at submit);
downloads are copied to the host in the command buffer's completion handler (once the
submission has finished). Kernels run as compiled C on the CPU.
"""

from __future__ import annotations

from luisa_nb.backends.simulated import SimulatedStagingBackend


class MetalBackend(SimulatedStagingBackend):
    name = "metal"
    simulates = "LuisaCompute Metal backend"
    description = (
        "simulation of LuisaCompute's Metal backend: uploads copied into a finite staging pool "
        "at encode, downloads copied to the host in the completion handler; kernels run on the "
        "CPU"
    )


backend_class = MetalBackend
