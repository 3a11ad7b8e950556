#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
A GPU workload for the truth check (truth.py): bf16 matmuls on the one GPU CUDA shows
(truth.py sets CUDA_VISIBLE_DEVICES), until SIGTERM.

  gpu_load.py full READY    back-to-back 8192x8192 bf16 matmuls (the GPU's full rate)
  gpu_load.py duty READY    the same for 30 ms of every 100 ms (~30 % duty cycle)

READY is created once CUDA is initialised and the first matmuls have run, so that the
check's phase starts with the workload at its steady rate, not with its start-up.
"""
import signal
import sys
import time

import torch

mode, ready = sys.argv[1], sys.argv[2]
stop = False


def on_term(_sig, _frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
dev = torch.device("cuda")
n = 8192
a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
for _ in range(20):
    c = a @ b
torch.cuda.synchronize()
print("gpu_load %s: %s, torch %s" % (mode, torch.cuda.get_device_name(0), torch.__version__), flush=True)
open(ready, "w").close()

period, busy = 0.1, 0.03
iters = 0
t_start = time.monotonic()
while not stop:
    if mode == "full":
        for _ in range(8):
            c = a @ b
        torch.cuda.synchronize()
        iters += 8
    else:
        t0 = time.monotonic()
        while time.monotonic() - t0 < busy:
            c = a @ b
            c = a @ b
            torch.cuda.synchronize()
            iters += 2
        rest = period - (time.monotonic() - t0)
        if rest > 0:
            time.sleep(rest)
el = time.monotonic() - t_start
print("gpu_load %s: %d matmuls in %.1f s, %.1f TFLOP/s" % (mode, iters, el, iters * 2 * n ** 3 / el / 1e12 if el else 0), flush=True)
