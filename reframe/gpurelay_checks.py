"""ReFrame checks for gpurelay: the pair (sizes and transports as parameters), the relay and the
collectives. Each run verifies itself (sanity: its verification line and exit code); its JSON
summary's figures are held against references per system as sites hold nccl-tests'. How to run
them: docs/OPERATIONS.md, "For site administrators"."""
import json
import math
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable


def _shown(figure, part=None):
    """A judged figure of the summary (schema 3: value, ci95, verdict): its value, or one end of
    its 95% interval; NaN where gpurelay withheld it."""
    if figure["verdict"] != "shown":
        return float("nan")
    return figure["value"] if part is None else figure["ci95"][part]


# The performance variables and where the JSON summary holds them (the one place that knows its
# layout, docs/OUTPUT.md): a pass's figures are the last pass's (overlap on). A withheld figure is
# left out of the log unless a reference names it: then it is NaN, which no reference passes.
PERF_VARIABLES = {
    "time_per_step": ("ms", lambda s: _shown(s["passes"][-1]["figures"]["time_per_step_ms"])),
    "transfer_bw": ("GB/s", lambda s: _shown(s["passes"][-1]["figures"]["transfer_gbps"])),
    "overlap_speedup": ("x", lambda s: _shown(s["figures"]["overlap_speedup"])),
    "overlap_speedup_lo": ("x", lambda s: _shown(s["figures"]["overlap_speedup"], 0)),
    "overlap_speedup_hi": ("x", lambda s: _shown(s["figures"]["overlap_speedup"], 1)),
    "slowest_pair_step": ("ms", lambda s: max(p["step_ms"] for p in s["passes"][-1]["pairs"])),
}

# References per system:partition and check ("PATTERN TRANSPORT SIZE"): {variable: (value, lower,
# upper)}, bounds as fractions of the value (None: unbounded); a check without one is logged, not
# judged. Set from a first run (docs/OPERATIONS.md); the H200's: PERFORMANCE.md's two-GPU transfer.
REFERENCES = {
    "h200:gpu": {
        "pairs nccl 4Mi": {"transfer_bw": (286.3, -0.10, None)},
        "pairs nccl 64Mi": {"transfer_bw": (359.9, -0.10, None)},
    },
}


class GpurelayCheck(rfm.RunOnlyRegressionTest):
    """One gpurelay launch, overlap off then on, its figures from the JSON summary."""
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    binary = variable(str, value="gpurelay")
    device = variable(str, value="auto")
    steps = variable(int, value=200)
    warmup = variable(int, value=20)
    # Each check sets pattern, transport, size (elements) and num_tasks.
    tags = {"gpurelay"}

    @run_after("init")
    def skip_nccl_without_gpus(self):
        self.skip_if(self.device == "cpu" and self.transport == "nccl", "NCCL needs GPUs")

    @run_after("setup")
    def set_command(self):
        # One node, a GPU per rank: ipc needs each pair on one node.
        self.num_tasks_per_node = self.num_tasks
        self.num_gpus_per_node = self.num_tasks
        self.executable = self.binary
        self.executable_opts = [
            "--device", self.device, "--pattern", self.pattern, "--transport", self.transport,
            "--elements", self.size, "--steps", str(self.steps), "--warmup", str(self.warmup),
            "--overlap", "compare", "--write", "none", "--output", "run.h5",
            "--summary-json", "summary.json"]
        # The launcher's exit status (gpurelay's) where the scheduler cannot give it.
        self.postrun_cmds = ['echo "gpurelay exit: $?"']
        key = f"{self.pattern} {self.transport} {self.size}"
        self.reference = {
            system: {name: (*bounds, PERF_VARIABLES[name][0]) for name, bounds in
                     checks[key].items()}
            for system, checks in REFERENCES.items() if key in checks}

    @sanity_function
    def verified(self):
        return sn.all([sn.assert_found(r"^verification: .*: PASSED$", self.stdout),
                       sn.assert_found(r"^gpurelay exit: 0$", self.stdout)])

    @run_before("performance")
    def set_perf_variables(self):
        # The job has ended: its summary is read once, here.
        with open(os.path.join(self.stagedir, "summary.json")) as file:
            summary = json.load(file)
        values = {name: extract(summary) for name, (_, extract) in PERF_VARIABLES.items()}
        judged = self.reference.get(self.current_partition.fullname, {})
        self.perf_variables = {
            name: sn.make_performance_function(sn.defer(values[name]), unit)
            for name, (unit, _) in PERF_VARIABLES.items()
            if name in judged or math.isfinite(values[name])}


@rfm.simple_test
class gpurelay_pair(GpurelayCheck):
    pattern = "pairs"
    size = parameter(["64Ki", "4Mi", "64Mi"])
    transport = parameter(["nccl", "ipc", "mpi"])
    num_tasks = 2


@rfm.simple_test
class gpurelay_relay(GpurelayCheck):
    pattern, transport, size = "relay", "auto", "4Mi"
    num_tasks = 4


@rfm.simple_test
class gpurelay_collective(GpurelayCheck):
    pattern = parameter(["broadcast", "allreduce"])
    transport, size = "auto", "4Mi"
    num_tasks = 4
