"""Skips a test whose optional Python module is missing: it prints the module's name and exits
77, which CTest's SKIP_RETURN_CODE reports as skipped, not failed (the GPU machine's Python, for
one, has no h5py). Imported before the modules it checks."""
import importlib
import sys

SKIP = 77


def need_modules(*names):
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            print(f"SKIP: {sys.executable} has no {name} (Debian: python3-{name})", flush=True)
            sys.exit(SKIP)
