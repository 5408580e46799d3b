"""torch.nn.DataParallel against DistributedDataParallel: what the first GPU carries.

DataParallel (pytorch/pytorch@b288b6e04eaddae5a16772937064c029751e66a1, torch/nn/parallel/data_parallel.py,
DataParallel.forward) is one process driving every GPU from threads. The module and its parameters live on
device_ids[0]; every forward scatters the batch, replicates the module onto the other devices, runs the replicas
(parallel_apply) and gathers every output onto output_device (default device_ids[0]). In the backward "gradients
from each replica are summed into the original module" (its docstring), so the .grad tensors, and the optimizer
built on module.parameters(), exist on device_ids[0] only. The PyTorch docs of nn.DataParallel: "It is recommended
to use DistributedDataParallel, instead of this class, to do multi-GPU training, even if there is only a single
node."

DistributedDataParallel runs one process per GPU: each rank keeps a whole replica, its own .grad and optimizer
states, and all-reduces the gradients bucket by bucket while the backward runs; the buckets are a second copy of
every gradient unless gradient_as_bucket_view=True (memlib.training.terms.ddp_bucket_bytes). Every rank holds the
same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib._checks import flag, plain_args, positive_int


@dataclass(frozen=True)
class DataParallelMemory:
    """Bytes of the parts that differ between the two schemes (per GPU); the layers' activations, the same
    ceil(batch / n) sequences per GPU in both, are left out."""

    dp_device0: dict       # DataParallel, device_ids[0]: master .grad, optimizer states, the gathered outputs
    dp_other: dict         # DataParallel, each other GPU: none of these kept (its replica is rebuilt every step)
    ddp_rank: dict         # DistributedDataParallel, every rank: its .grad, optimizer states, buckets, own outputs

    @property
    def dp_device0_bytes(self) -> int:
        return sum(self.dp_device0.values())

    @property
    def ddp_rank_bytes(self) -> int:
        return sum(self.ddp_rank.values())

    @property
    def dp_over_ddp_bytes(self) -> int:
        """How much more DataParallel's device 0 holds than a DDP rank (negative: less)."""
        return self.dp_device0_bytes - self.ddp_rank_bytes


@plain_args
def data_parallel_memory(num_params: int, batch: int, seq_len: int, vocab_size: int, n_gpus: int, *,
                         grad_bytes: int = 4, optimizer_bytes_per_param: int = 8, output_bytes: int = 4,
                         gradient_as_bucket_view: bool = False) -> DataParallelMemory:
    """The per-GPU bytes that DataParallel concentrates on device_ids[0] and DDP spreads over its ranks.

    DataParallel, device 0: the master gradients num_params x grad_bytes (the replicas' gradients are summed
    into them), the optimizer states num_params x optimizer_bytes_per_param (AdamW's fp32 m and v: 8) and the
    outputs of the whole batch gathered there, batch x seq_len x vocab_size x output_bytes (a causal LM's
    logits; fp32 by default). The other GPUs keep none of these: each computes its chunk's outputs, which the
    gather copies to device 0. DDP, every rank: the same gradients and optimizer states, the all-reduce buckets
    (num_params x grad_bytes, none with gradient_as_bucket_view=True) and the outputs of its own
    ceil(batch / n_gpus) sequences (torch scatters the batch in chunks of ceil(batch / n)).
    """
    num_params = positive_int("num_params", num_params)
    batch, seq_len = positive_int("batch", batch), positive_int("seq_len", seq_len)
    vocab_size, n_gpus = positive_int("vocab_size", vocab_size), positive_int("n_gpus", n_gpus)
    if n_gpus < 2:
        raise ValueError(f"n_gpus must be at least 2 to compare data parallelism over GPUs, got {n_gpus}")
    if batch < n_gpus:
        raise ValueError(f"batch ({batch}) must be at least n_gpus ({n_gpus}): torch's docs say the batch size "
                         "should be larger than the number of GPUs used (a smaller batch leaves GPUs idle)")
    grad_bytes = positive_int("grad_bytes", grad_bytes, maximum=8)
    optimizer_bytes_per_param = positive_int("optimizer_bytes_per_param", optimizer_bytes_per_param,
                                             allow_zero=True, maximum=64)
    output_bytes = positive_int("output_bytes", output_bytes, maximum=8)
    view = flag("gradient_as_bucket_view", gradient_as_bucket_view)
    per_sequence = seq_len * vocab_size * output_bytes
    chunk = -(-batch // n_gpus)
    grads, states = num_params * grad_bytes, num_params * optimizer_bytes_per_param
    return DataParallelMemory(
        dp_device0={"gradients": grads, "optimizer": states, "gathered outputs": batch * per_sequence},
        dp_other={"gradients": 0, "optimizer": 0, "gathered outputs": 0},
        ddp_rank={"gradients": grads, "optimizer": states, "buckets": 0 if view else grads,
                  "own outputs": chunk * per_sequence},
    )
