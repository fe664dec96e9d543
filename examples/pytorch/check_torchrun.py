"""The training script of examples/pytorch-torchrun-elastic.yaml, in place of a PyTorch one: it checks the
PET_* variables the controller set and the torchrun command line it was started with (TORCHRUN_ARGV, from
the stand-in examples/pytorch/bin/torchrun), against the spec's "torchrun mode" and "Elastic"."""

import json
import os
import sys
import time

env = os.environ
job, uid, index = env["JOB"], env["JOB_UID"], env["INDEX"]
endpoint = f"{job}-worker-0:23456"  # no master type: worker-0 is global rank 0
expected = {"PET_NNODES": "1:3", "PET_NPROC_PER_NODE": "1", "PET_MASTER_ADDR": f"{job}-worker-0",
            "PET_MASTER_PORT": "23456", "PET_RDZV_BACKEND": "c10d", "PET_RDZV_ENDPOINT": endpoint,
            "PET_RDZV_ID": uid}
found = {name: env.get(name) for name in expected}
assert found == expected, found
assert "PET_NODE_RANK" not in env and "PET_MAX_RESTARTS" not in env  # elastic; maxRestarts unset
assert env["MASTER_ADDR"] == f"{job}-worker-0" and env["MASTER_PORT"] == "23456"
command_line = json.loads(env["TORCHRUN_ARGV"])
assert command_line == ["--nnodes=1:3", "--nproc_per_node=1", "--rdzv_backend=c10d", f"--rdzv_endpoint={endpoint}",
                        f"--rdzv_id={uid}", "examples/pytorch/check_torchrun.py", "--epochs", "1"], command_line
assert sys.argv[1:] == ["--epochs", "1"], sys.argv
print(f"worker-{index} torchrun {' '.join(command_line[:5])} local rank {env['LOCAL_RANK']}", flush=True)
time.sleep(float(env.get("TRAIN_SECONDS", "1")))
print(f"worker-{index} trained", flush=True)
