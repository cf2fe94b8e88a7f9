"""Google Benchmark's JSON output, as gpurelay's sized benchmarks name their runs."""
import json


def sized_runs(path):
    """{(family, bytes): run} from a Google Benchmark JSON file whose runs are named
    FAMILY/NAME/BYTES[/...]: "transport/ipc_gpu/4096/manual_time" is family "transport/ipc_gpu"
    at 4096 bytes. Failed runs are kept (they carry error_occurred); other names are left out."""
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    sized = {}
    for run in runs:
        parts = run["name"].split("/")
        if len(parts) > 2 and parts[2].isdigit():
            sized[("/".join(parts[:2]), int(parts[2]))] = run
    return sized
