#!/usr/bin/env python3
"""gpurelay's pipeline as a PyTorch user would write it: one process, one GPU, the transfer a
device copy (the analogue of `mpirun -np 1 gpurelay --transport nccl`), every element checked.

Per step s, slot k = s % depth, three streams ordered by events (pipeline/step.cpp):
  producer: wait copy_done[k] (step s-depth's copy has read x_send[k]); A into x_send[k]
  comm (higher priority): wait a_done[k] and x_free[k] (B of step s-depth has read x_recv[k]);
            x_recv[k].copy_(x_send[k]); record copy_done[k] (also the "received" event)
  compute:  C (optional); wait copy_done[k]; B: y[k] = alpha * x_recv[k]; count x_recv[k] !=
            A's formula into a device counter; record x_free[k]; check C against its closed form
Formulas: kernels/formula.hpp, in int64 tensors masked to 32 bits. The one host sync is at the
end: the GPU's count, and y of the last step against a_value_py on the host. Exit 3 if wrong.

lab/gpu-check's stage small runs it beside gpurelay's 4 KiB steps, for lab/lib/torch_vs_gpurelay.py
to compare. Without PyTorch or a GPU it says so in one line and exits 2 (0 with --skip-without-gpu).
"""
import argparse
import json
import struct
import sys
import time

MASK = 0xFFFFFFFF
A_MUL_I, A_MUL_S = 2654435761, 2654435769
C_MUL_I, C_MUL_S = 0x9E3779B1, 0x85EBCA77
LCG_MUL, LCG_INC = 1664525, 1013904223
SUFFIXES = {"": 1, "k": 10**3, "K": 10**3, "Ki": 2**10, "M": 10**6, "Mi": 2**20,
            "G": 10**9, "Gi": 2**30}
MAX_ELEMENTS = 2**30  # i * 2654435761 stays below 2^63 in int64
DEVICE = "cuda"  # a test without CUDA runs the arithmetic on "cpu", streams and events faked


def a_term(step, seed):
    """A's step half: (s * 2654435769 + seed) mod 2^32."""
    return ((step & MASK) * A_MUL_S + seed) & MASK


def a_value_py(step, i, seed):
    """x[i] of step s (kernels/formula.hpp a_value), in pure Python for the host check (written
    out again, not through a_term, so that the check does not share the GPU side's code)."""
    u = ((i * 2654435761) & MASK) ^ (((step & MASK) * 2654435769 + seed) & MASK)
    return (u >> 8) * 2.0**-24


def c_term(step, seed):
    return ((step & MASK) * C_MUL_S + seed) & MASK


def lcg_jump(n):
    """n steps of z -> z * 1664525 + 1013904223 (mod 2^32) as one (multiplier, increment)."""
    acc, cur = (1, 0), (LCG_MUL, LCG_INC)
    while n > 0:
        if n & 1:
            acc = ((acc[0] * cur[0]) & MASK, (acc[1] * cur[0] + cur[1]) & MASK)
        cur = ((cur[0] * cur[0]) & MASK, ((cur[0] + 1) * cur[1]) & MASK)
        n >>= 1
    return acc


def b_value_py(alpha, x, dtype):
    """alpha * x rounded once in the tensor's type (x and alpha's float32 are exact in double)."""
    if dtype == "float64":
        return alpha * x
    f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]  # noqa: E731
    return f32(f32(alpha) * x)


def parse_count(text):
    digits = text.rstrip("kKMGi")
    if not digits.isdigit() or text[len(digits):] not in SUFFIXES:
        raise argparse.ArgumentTypeError(f"'{text}' is not a count (4096, 64Ki, 1Mi, 2G)")
    return int(digits) * SUFFIXES[text[len(digits):]]


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"torch_pipeline: {message}\n")


def parse_args(argv):
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--elements", type=parse_count, default=1024)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--c-elements", type=parse_count, default=0)
    p.add_argument("--c-iterations", type=int, default=64)
    p.add_argument("--alpha", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--graphs", action="store_true", help="replay CUDA graphs of --graph-steps")
    p.add_argument("--graph-steps", type=int, default=0, help="steps per graph (default depth)")
    p.add_argument("--json", metavar="PATH", help="write the result here")
    p.add_argument("--skip-without-gpu", action="store_true",
                   help="exit 0, not 2, when there is no PyTorch or no CUDA GPU")
    a = p.parse_args(argv)
    a.graph_steps = a.graph_steps or a.depth
    if not 1 <= a.elements <= MAX_ELEMENTS or not 0 <= a.c_elements <= MAX_ELEMENTS:
        p.error(f"--elements and --c-elements: 1 .. {MAX_ELEMENTS} (0 for no C)")
    if min(a.depth, a.steps, a.graph_steps) < 1 or min(a.warmup, a.c_iterations, a.seed) < 0:
        p.error("--depth, --steps, --graph-steps at least 1; --warmup, --c-iterations, --seed "
                "at least 0")
    if a.seed > MASK or a.steps + a.warmup + a.depth >= 2**31:
        p.error("--seed below 2^32, and steps + warmup below 2^31")
    if a.graphs and (a.graph_steps % a.depth or a.steps % a.graph_steps):
        p.error("--graphs: --graph-steps a multiple of --depth, dividing --steps")
    return a


class Pipeline:
    """Every tensor and event allocated once, before any side stream runs, and kept to the end:
    no slot is ever freed, so the caching allocator cannot hand its memory to another stream.
    Each stream writes only its own scratch tensors (out= and in-place ops)."""

    def __init__(self, torch, args):
        self.torch, self.args = torch, args
        t, n, dev = torch, args.elements, DEVICE
        dtype = getattr(t, args.dtype)
        nan = lambda: t.full((n,), float("nan"), dtype=dtype, device=dev)  # noqa: E731
        d = range(args.depth)
        self.x_send, self.x_recv, self.y = ([nan() for _ in d] for _ in range(3))
        # A's step-independent half, computed once (what a careful user hoists out of the loop).
        self.a_i = (t.arange(n, dtype=t.int64, device=dev) * A_MUL_I) & MASK
        self.a_bits = t.empty(n, dtype=t.int64, device=dev)  # producer stream's
        self.check_bits = t.empty(n, dtype=t.int64, device=dev)  # compute stream's
        self.expected, self.unequal = nan(), t.empty(n, dtype=t.bool, device=dev)
        self.count, self.wrong = (t.zeros((), dtype=t.int64, device=dev) for _ in range(2))
        m = args.c_elements
        self.c_i = (t.arange(m, dtype=t.int64, device=dev) * C_MUL_I) & MASK
        self.z, self.c_want, self.c_hi = (t.empty(m, dtype=t.int64, device=dev) for _ in range(3))
        self.c_unequal = t.empty(m, dtype=t.bool, device=dev)
        self.jump = lcg_jump(args.c_iterations)
        # The comm stream gets the higher priority, as in gpurelay: C must not delay the copy.
        self.producer, self.compute = t.cuda.Stream(), t.cuda.Stream()
        self.comm = t.cuda.Stream(priority=-1)
        self.a_done, self.copy_done, self.x_free = ([t.cuda.Event() for _ in d] for _ in range(3))
        t.cuda.synchronize()  # the buffers above were made on the default stream

    def fill_a(self, out, bits, term):
        t = self.torch
        t.bitwise_xor(self.a_i, term, out=bits)
        bits.bitwise_right_shift_(8)
        t.mul(bits, 2.0**-24, out=out)

    def queue_step(self, s, a_t, c_t, capture_first=None):
        """Step s; a_t and c_t are its step terms (ints eager, 0-dim device tensors in a graph)."""
        t, k = self.torch, s % self.args.depth
        # A graph waits only on events of its own steps; an earlier replay has finished.
        reuse_wait = capture_first is None or s - self.args.depth >= capture_first
        with t.cuda.stream(self.producer):
            if reuse_wait:
                self.producer.wait_event(self.copy_done[k])
            self.fill_a(self.x_send[k], self.a_bits, a_t)
            self.a_done[k].record(self.producer)
        with t.cuda.stream(self.comm):
            self.comm.wait_event(self.a_done[k])
            if reuse_wait:
                self.comm.wait_event(self.x_free[k])
            self.x_recv[k].copy_(self.x_send[k], non_blocking=True)
            self.copy_done[k].record(self.comm)
        with t.cuda.stream(self.compute):
            if self.args.c_elements:
                self.run_c(c_t)
            self.compute.wait_event(self.copy_done[k])  # on the GPU: no host sync per step
            t.mul(self.x_recv[k], self.args.alpha, out=self.y[k])
            self.fill_a(self.expected, self.check_bits, a_t)
            t.ne(self.x_recv[k], self.expected, out=self.unequal)
            t.sum(self.unequal, dim=0, dtype=t.int64, out=self.count)
            self.wrong.add_(self.count)
            self.x_free[k].record(self.compute)
            if self.args.c_elements:
                self.check_c(c_t)

    def run_c(self, c_t):
        z = self.z
        self.torch.add(self.c_i, c_t, out=z).bitwise_and_(MASK)
        for _ in range(self.args.c_iterations):
            z.mul_(LCG_MUL).add_(LCG_INC).bitwise_and_(MASK)

    def check_c(self, c_t):
        """z against jump.multiplier * c_start + jump.increment (mod 2^32), the product taken in
        16-bit halves of the multiplier so that it stays below 2^63 in int64."""
        t, (mul, inc), want, hi = self.torch, self.jump, self.c_want, self.c_hi
        t.add(self.c_i, c_t, out=want).bitwise_and_(MASK)
        t.mul(want, mul >> 16, out=hi).bitwise_and_(0xFFFF).bitwise_left_shift_(16)
        want.mul_(mul & 0xFFFF).add_(hi).add_(inc).bitwise_and_(MASK)
        t.ne(self.z, want, out=self.c_unequal)
        t.sum(self.c_unequal, dim=0, dtype=t.int64, out=self.count)
        self.wrong.add_(self.count)

    def eager_step(self, s):
        self.queue_step(s, a_term(s, self.args.seed), c_term(s, self.args.seed))

    def capture(self, first):
        """One CUDA graph of steps first .. first+G-1, its step number read from self.base."""
        t, g_steps, seed, dev = self.torch, self.args.graph_steps, self.args.seed, DEVICE
        self.base = t.zeros((), dtype=t.int64, device=dev)
        offsets = t.arange(g_steps, dtype=t.int64, device=dev)
        steps, a_terms, c_terms = (t.empty(g_steps, dtype=t.int64, device=dev) for _ in range(3))
        fork, joins = t.cuda.Event(), [t.cuda.Event() for _ in range(3)]
        for event in (fork, *joins):
            event.record()  # created now: no event is created while the capture runs
        streams = (self.producer, self.comm, self.compute)

        def body():
            here = t.cuda.current_stream()
            t.add(offsets, self.base, out=steps)
            t.mul(steps, A_MUL_S, out=a_terms).add_(seed).bitwise_and_(MASK)
            t.mul(steps, C_MUL_S, out=c_terms).add_(seed).bitwise_and_(MASK)
            fork.record(here)  # the side streams join the capture by waiting on it
            for stream in streams:
                stream.wait_event(fork)
            for j in range(g_steps):
                self.queue_step(first + j, a_terms[j], c_terms[j], capture_first=first)
            for join, stream in zip(joins, streams):  # and rejoin it before it ends
                join.record(stream)
                here.wait_event(join)

        self.graph, self.graph_body = t.cuda.CUDAGraph(), body  # body: for a test without CUDA
        with t.cuda.graph(self.graph):
            body()

    def replay(self, first):
        self.base.fill_(first)  # a kernel on the replay stream, ordered before the graph
        self.graph.replay()


def timed(torch, queue, units):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for u in units:
        queue(u)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
        gpu, why = torch.cuda.is_available(), f"PyTorch {torch.__version__} sees none"
    except ImportError:
        gpu, why = False, "PyTorch is not installed"
    if not gpu:
        print(f"torch_pipeline: no CUDA GPU ({why})", file=sys.stderr)
        return 0 if args.skip_without_gpu else 2
    pipe, d, g = Pipeline(torch, args), args.depth, args.graph_steps
    if args.graphs:
        # Steps 0 .. depth-1 eager, so every kernel has run once before the capture.
        timed(torch, pipe.eager_step, range(d))
        pipe.capture(d)
        torch.cuda.synchronize()
        # Graphs of g steps from step d, the warm-up rounded up to whole graphs.
        warm = -(-args.warmup // g)
        queue, firsts = pipe.replay, range(d, d + warm * g + args.steps, g)
    else:
        warm, queue, firsts = args.warmup, pipe.eager_step, range(args.warmup + args.steps)
    timed(torch, queue, firsts[:warm])
    seconds = timed(torch, queue, firsts[warm:])
    last = firsts[-1] + (g - 1 if args.graphs else 0)
    wrong = int(pipe.wrong.item())
    # y of the last step against the formula in Python: every element up to 64Ki, else every
    # n/64Ki-th and the last.
    n = args.elements
    idx = list(range(0, n - 1, max(1, n // 65536))) + [n - 1]
    y = pipe.y[last % d].cpu()[torch.tensor(idx)].tolist()
    y_wrong = sum(v != b_value_py(args.alpha, a_value_py(last, i, args.seed), args.dtype)
                  for v, i in zip(y, idx))
    ms = seconds * 1e3 / args.steps
    mode = "graphs" if args.graphs else "eager"
    nbytes = n * (4 if args.dtype == "float32" else 8)
    result = {"elements": n, "bytes": nbytes, **{k: getattr(args, k) for k in (
              "dtype", "depth", "steps", "warmup", "c_elements", "c_iterations")}, "mode": mode,
              "graph_steps": g if args.graphs else 0,
              "time_per_step_ms": ms, "wrong": wrong + y_wrong,
              "torch_version": torch.__version__, "device_name": torch.cuda.get_device_name()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if wrong or y_wrong:
        print(f"torch_pipeline: verification failed: {wrong} wrong on the GPU, {y_wrong} of "
              f"{len(idx)} sampled y of step {last} wrong on the host", file=sys.stderr)
        return 3
    print(f"torch_pipeline: {nbytes} B, {mode}, depth {d}: {ms:.4f} ms per step, 0 wrong")
    return 0


if __name__ == "__main__":
    sys.exit(main())
