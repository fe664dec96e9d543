"""A real PyTorch DDP training script, written for a cluster: the same file runs under the controller's
environment (DDP: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE) and under torchrun (which sets them for its
workers). Every rank trains a small model on its own random batches; DDP averages the gradients, so the
ranks' parameters stay equal, which the script checks with an all_gather before it reports."""

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")  # env://: the variables above; gloo runs on CPUs
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(1234)  # the same initial parameters on every rank (DDP broadcasts rank 0's anyway)
model = DistributedDataParallel(torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
generator = torch.Generator().manual_seed(rank)  # each rank its own data
for _step in range(int(os.environ.get("STEPS", "30"))):
    x = torch.randn(64, 16, generator=generator)
    loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
everyone = [torch.zeros_like(flat) for _ in range(world)]
dist.all_gather(everyone, flat)
assert all(torch.equal(other, flat) for other in everyone), "the ranks' parameters differ"
# One write of the whole line: torchrun's local ranks share the pod's output, and with PYTHONUNBUFFERED (the
# controller sets it) print() writes the text and its newline apart, so two ranks' lines could run together.
sys.stdout.write(f"rank {rank} of {world} on {os.environ.get('HOSTNAME')}: loss {loss.item():.4f}, parameters "
                 f"equal on every rank (master {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']})\n")
sys.stdout.flush()
# Every rank past its last collective before any tears down: a rank that destroys its process group while a peer's
# gloo threads still talk to it can make that peer abort ("terminate called without an active exception").
dist.barrier()
# DDP's reducer holds the process group and its pending work: freed now, while the interpreter is whole.
del model, optimizer
dist.destroy_process_group()
# Then leave without the interpreter's finalization: a gloo thread that still wants the GIL there is ended by
# pthread_exit inside C++ code that may not unwind, and the process aborts ("terminate called without an active
# exception", SIGABRT) after its work is done. On a loaded machine this happened to one run in a few.
sys.stderr.flush()
os._exit(0)
