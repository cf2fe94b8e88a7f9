"""The one argument of the lab's table helpers: the lab/gpu-check folder they read."""
import argparse
import os
import sys


def gpu_check_dir(argv, doc, runs):
    """OUT_DIR from argv (argparse: --help prints doc), a folder of lab/gpu-check --runs RUNS."""
    parser = argparse.ArgumentParser(prog=f"lab/lib/{os.path.basename(sys.argv[0])}",
                                     description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", metavar="OUT_DIR",
                        help=f"a lab/gpu-check folder that ran --runs {runs}")
    return parser.parse_args(argv).out_dir
