"""bench/torch_pipeline.py's time per step against gpurelay's, on the same GPU (the target:
gpurelay at least 20x faster at 4 KiB).

TORCH is torch_pipeline.py's --json, GPURELAY a gpurelay summary. Prints a markdown row per pair;
exits 1 on a pair of unlike tensors (no meaningful ratio), a failed check, or no pair.
"""
import argparse
import glob
import json
import os
import sys

from perf_tables import size_name


def config_value(value):
    """A summary's config value: typed in new summaries, TOML text ('"float32"', '1024') in old."""
    if isinstance(value, str):
        value = value.strip('"')
        return int(value) if value.isdigit() else value
    return value


def gpurelay_run(path):
    """(elements, dtype, mode, ms per step, verified) of a gpurelay summary JSON."""
    with open(path) as f:
        summary = json.load(f)
    config, last = summary["config"], summary["passes"][-1]
    mode = "graphs" if last["graphs"]["captured"] else "eager"
    return (config_value(config["elements"]), config_value(config["dtype"]), mode,
            last["time_per_step_ms"], bool(summary["verified"]))


def pairs_in(directory):
    """(torch_NAME.json, NAME.json) for each NAME in `directory` that has both."""
    return [(path, theirs) for path in sorted(glob.glob(os.path.join(directory, "torch_*.json")))
            if os.path.exists(theirs := os.path.join(directory, os.path.basename(path)[6:]))]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", nargs="?", help="folder of torch_NAME.json beside NAME.json")
    p.add_argument("--pair", nargs=2, action="append", default=[], metavar=("TORCH", "GPURELAY"))
    args = p.parse_args(argv)
    pairs = args.pair + (pairs_in(args.dir) if args.dir else [])
    if not pairs:
        print("torch vs gpurelay: no pair (torch_NAME.json beside NAME.json, or --pair)")
        return 1
    status = 0
    print("size | torch / gpurelay mode | torch ms/step | gpurelay ms/step | torch / gpurelay")
    print("---|---|---|---|---")
    for torch_path, gpurelay_path in pairs:
        with open(torch_path) as f:
            ours = json.load(f)
        elements, dtype, mode, ms, verified = gpurelay_run(gpurelay_path)
        if (elements, dtype) != (ours["elements"], ours["dtype"]):
            print(f"{torch_path}: {ours['elements']} {ours['dtype']} against "
                  f"{elements} {dtype} in {gpurelay_path}: not the same tensor")
            status = 1
            continue
        failed = ours["wrong"] != 0 or not verified
        status = 1 if failed else status
        print(f"{size_name(ours['bytes'])} | {ours['mode']} / {mode} | "
              f"{ours['time_per_step_ms']:.4f} | {ms:.4f} | {ours['time_per_step_ms'] / ms:.1f}x"
              + (" (a run FAILED its check)" if failed else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
