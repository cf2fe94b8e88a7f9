"""bench/torch_pipeline.py's tensor arithmetic on the CPU, where PyTorch is importable but there is
no GPU: streams, events and graphs are faked (everything runs in program order, a graph replay
runs the captured steps again), so this checks A, B, C, the GPU-side counts and the host check,
eager and with the graph's step tensors; not the ordering, which only a GPU run can.

usage: torch_pipeline_fake_cuda.py REPO_ROOT    (exit 77, skipped, without PyTorch)
"""
import contextlib
import io
import json
import os
import sys
import tempfile

try:
    import torch
except ImportError:
    print("skipped: PyTorch is not importable here")
    sys.exit(77)

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import torch_pipeline as tp  # noqa: E402


class FakeStream:
    def __init__(self, priority=0):
        pass

    def wait_event(self, event):
        pass


class FakeEvent:
    def record(self, stream=None):
        pass


class FakeGraph:
    pass


torch.cuda.is_available = lambda: True
torch.cuda.get_device_name = lambda: "cpu (fake CUDA)"
torch.cuda.synchronize = lambda: None
torch.cuda.Stream, torch.cuda.Event, torch.cuda.CUDAGraph = FakeStream, FakeEvent, FakeGraph
torch.cuda.current_stream = FakeStream
torch.cuda.stream = lambda stream: contextlib.nullcontext()
torch.cuda.graph = lambda graph: contextlib.nullcontext()
tp.DEVICE = "cpu"
capture = tp.Pipeline.capture


def capture_and_keep(self, first):
    capture(self, first)
    self.graph.replay = self.graph_body  # a replay runs the captured steps again


tp.Pipeline.capture = capture_and_keep
failures = []


def run(flags, want_rc, want_text):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.json")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = tp.main(flags + ["--json", path])
        text = out.getvalue() + err.getvalue()
        ok = rc == want_rc and want_text in text
        print(("ok   " if ok else "FAIL ") + f"{' '.join(flags)}: rc {rc}, {text.strip()}")
        if not ok:
            failures.append(flags)
        return json.load(open(path))


SMALL = ["--elements", "3001", "--steps", "12", "--warmup", "4"]
C = ["--c-elements", "1000", "--c-iterations", "5"]
r = run(SMALL + C, 0, "12004 B, eager, depth 2:")
if (r["elements"], r["bytes"], r["mode"], r["wrong"], r["c_elements"]) != (3001, 12004, "eager",
                                                                           0, 1000):
    failures.append(f"JSON: {r}")
run(SMALL + ["--dtype", "float64", "--alpha", "0.37", "--depth", "3"], 0, "24008 B, eager, depth 3")
run(SMALL + C + ["--graphs", "--graph-steps", "4"], 0, "12004 B, graphs, depth 2:")
run(["--elements", "200Ki", "--steps", "2", "--warmup", "0"], 0, "819200 B, eager")  # y sampled
run(SMALL + ["--graphs", "--depth", "1", "--dtype", "float64", "--alpha", "0.37"], 0, "graphs")

# Each check fails when it should: A's step term wrong for producer and checker alike (only the
# host's formula sees it); one element corrupted in every copy; one more C iteration.
a_term = tp.a_term
tp.a_term = lambda step, seed: a_term(step + 1, seed)
run(SMALL, 3, "verification failed: 0 wrong on the GPU, 3001 of 3001 sampled y")
tp.a_term = a_term
copy = torch.Tensor.copy_


def corrupting_copy(self, source, non_blocking=False):
    copy(self, source, non_blocking)
    self[7] += 1.0
    return self


torch.Tensor.copy_ = corrupting_copy
run(SMALL, 3, "verification failed: 16 wrong on the GPU, 1 of 3001 sampled y")
# 2 priming steps, 16 replayed and 2 at the capture (a fake capture runs what it captures).
run(SMALL + ["--graphs"], 3, "verification failed: 20 wrong on the GPU")
torch.Tensor.copy_ = copy
run_c = tp.Pipeline.run_c
tp.Pipeline.run_c = lambda self, c_t: (run_c(self, c_t), self.z.mul_(tp.LCG_MUL).add_(
    tp.LCG_INC).bitwise_and_(tp.MASK))
run(SMALL + C, 3, "verification failed: 16000 wrong on the GPU, 0 of")
tp.Pipeline.run_c = run_c
sys.exit(1 if failures else 0)
