"""Where the tools find gpurelay and write (installed: ./outputs/, not into a site's prefix)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALLED = not os.path.isfile(os.path.join(ROOT, "CMakeLists.txt"))
BINARY = os.path.normpath(os.path.join(ROOT, "..", "bin", "gpurelay") if INSTALLED
                          else os.path.join(ROOT, "build", "app", "gpurelay"))


def outputs(name):
    return os.path.join(os.path.abspath("outputs") if INSTALLED else os.path.join(ROOT, "outputs"),
                        name)


def mpirun(np):
    """mpirun -np NP, told to start as root (containers, CI) and more ranks than cores."""
    return (["mpirun", "-np", str(np)] + ["--allow-run-as-root"] * (os.geteuid() == 0)
            + ["--oversubscribe"] * ((os.cpu_count() or 1) < np))
