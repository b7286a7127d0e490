"""A conftest written like NVIDIA TileGym's: it asks torch about the GPU while registering options."""
import pytest
import torch


def pytest_addoption(parser):
    cap = torch.cuda.get_device_capability("cuda")
    parser.addoption("--arch", default=f"sm{cap[0]}{cap[1]}", help="GPU architecture")


@pytest.fixture
def arch(request):
    return request.config.getoption("--arch")


@pytest.fixture(autouse=True)
def _cuda_only():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    torch.cuda.manual_seed(0)
    yield
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
