#!/usr/bin/env python3
"""examples/export_pytorch_model.py --profile on the CPU, read back by `autosync optimize`.

    python3 tests/unit/export_profile.py <autosync> <work dir>

The toy model is profiled (2 timed steps): the JSON must carry the measured forward and
backward, a ready_time for every tensor within [0, backward] that follows the backward order,
and the precision; autosync must load it and its predicted compute must be exactly the measured
forward + backward (the profile replaces the compute model). Exit 77 (skipped) without torch.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import setup  # noqa: E402

ex, autosync, work = setup()
import torch  # noqa: E402

out = os.path.join(work, "toy_profile.json")
ex.main(["--profile", "--batch", "4", "--iters", "2", "--warmup", "1", "--device", "cpu", "--out", out])
doc = json.load(open(out))
fwd, bwd = doc["measured_forward"], doc["measured_backward"]
assert fwd > 0 and bwd > 0, (fwd, bwd)
assert doc["precision"] == "pytorch-fp32" and doc["measured_on"].startswith("CPU")
ts = doc["tensors"]
assert all(0.0 <= t["ready_time"] <= bwd for t in ts)
# gradients become ready in backward order: the later its ready_order, the later its ready_time
by_order = sorted(ts, key=lambda t: t["ready_order"])
assert all(a["ready_time"] <= b["ready_time"] for a, b in zip(by_order, by_order[1:])), \
    [(t["name"], t["ready_order"], t["ready_time"]) for t in by_order]

r = subprocess.run([autosync, "optimize", "--model", out, "--cluster", "local-2", "--json", "--budget", "50"],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stderr
res = json.loads(r.stdout)
compute = res["predicted_iteration_s"] - res["predicted_exposed_s"]
assert abs(compute - (fwd + bwd)) <= 1e-9 * (fwd + bwd) + 1e-12, (compute, fwd + bwd)

# a bad precision is refused by the script, naming the choices
try:
    ex.profile(ex.ToyNet(), (torch.randn(2, 3, 32, 32), torch.randint(0, 1000, (2,))), precision="fp8")
    raise AssertionError("fp8 accepted")
except ValueError as e:
    assert "precision must be one of" in str(e)
print(f"ok: {len(ts)} tensors, forward {fwd * 1e3:.3f} ms, backward {bwd * 1e3:.3f} ms, predicted compute {compute * 1e3:.3f} ms")
