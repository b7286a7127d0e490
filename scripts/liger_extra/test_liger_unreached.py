"""Liger-Kernel Triton kernels its own tests do not launch on a CPU-only machine, launched as Liger's
modules would be (issue 24: every Liger kernel gets a verdict). Run from a Liger export, like
scripts/liger_tests.sh runs Liger's files (not part of tilecheck's suite: it needs torch and Liger):

    cd LIGER_SRC && PYTHONPATH=src:. python -m pytest -q TILECHECK/scripts/liger_extra --tilecheck-cpu-device
"""
import torch
from liger_kernel.transformers.rms_norm import LigerRMSNorm
from liger_kernel.transformers.vocab_parallel_cross_entropy import LigerVocabParallelCrossEntropy


def test_block_rms_norm_forward_and_backward():
    # the block kernels run only for >= 32768 rows of <= 256 columns, a shape Liger's tests do not use
    torch.manual_seed(0)
    x = torch.randn(32768, 256, device="cuda", requires_grad=True)
    norm = LigerRMSNorm(256).to("cuda")
    y = norm(x)
    y.sum().backward()
    ref = x.detach() * torch.rsqrt(x.detach().pow(2).mean(-1, keepdim=True) + 1e-6)
    assert torch.allclose(y.detach(), ref, atol=1e-4)


def test_vocab_parallel_ce_tp1_matches_torch():
    # no test file of Liger's; at TP=1 (no process group) both kernels run, no collective
    torch.manual_seed(0)
    s, b, v = 64, 2, 4096
    logits = torch.randn(s, b, v, device="cuda", requires_grad=True)
    target = torch.randint(0, v, (s, b), device="cuda")
    target[0, 0] = -100
    loss = LigerVocabParallelCrossEntropy()(logits, target)
    loss.sum().backward() if loss.dim() else loss.backward()
    ref = torch.nn.functional.cross_entropy(logits.detach().reshape(-1, v).double(), target.reshape(-1), reduction="none")
    assert torch.allclose(loss.detach().double().reshape(-1) if loss.dim() else loss.detach().double(),
                          ref if loss.dim() else ref[target.reshape(-1) != -100].mean(), atol=1e-3)


def test_swiglu_fused_gate_up_forward_and_backward():
    # reached through liger_kernel.ops only (Megatron's fused fc1 output), by no module or test
    from liger_kernel.ops.swiglu import swiglu_fused_gate_up_backward, swiglu_fused_gate_up_forward

    torch.manual_seed(0)
    y = torch.randn(8, 64, 2 * 384, device="cuda")
    _, c = swiglu_fused_gate_up_forward(y)
    gate, up = y[..., :384], y[..., 384:]
    assert torch.allclose(c, torch.nn.functional.silu(gate) * up, atol=1e-5)
    assert swiglu_fused_gate_up_backward(y, torch.ones_like(c)).numel() == y.numel()


def test_gemm_swiglu_inference():
    # LigerMLP's forward without gradients takes the inference kernel; the module asserts is_cuda,
    # which CPU tensors standing in for CUDA ones cannot satisfy, so its op is called directly
    from liger_kernel.ops.mlp import gemm_swiglu

    torch.manual_seed(0)
    x = torch.randn(2, 64, 128, device="cuda")
    wg, wu = torch.randn(256, 128, device="cuda") / 16, torch.randn(256, 128, device="cuda") / 16
    a, _ = gemm_swiglu(x, wg, wu, 1.0, store_preact=False)
    assert torch.allclose(a, torch.nn.functional.silu(x @ wg.T) * (x @ wu.T), atol=1e-3)

