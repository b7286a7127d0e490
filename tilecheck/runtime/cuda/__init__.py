"""The cuda backend: launches through ``ct.launch`` on cuda-python streams, CUDA graphs, and the
differential runner on the device. ``SimulatedDriver`` runs the same code on the CPU."""
from tilecheck.runtime.cuda.driver import (
           CudaDriver,
           CudaError,
           cuda_available,
           current_driver,
           stream_handle,
           use_driver,
)
from tilecheck.runtime.cuda.memory import DeviceArray, to_device, to_host
from tilecheck.runtime.cuda.simulated import SimulatedDriver

__all__ = ["CudaDriver", "CudaError", "DeviceArray", "SimulatedDriver", "cuda_available", "current_driver",
           "stream_handle", "to_device", "to_host", "use_driver"]
