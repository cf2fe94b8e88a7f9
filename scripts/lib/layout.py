"""Where the tools find gpurelay and write by default. From a checkout (scripts/lib/): the
repository's build/app/gpurelay and outputs/. Installed (PREFIX/libexec/gpurelay/lib/, by
cmake --install): PREFIX/bin/gpurelay, and outputs/ in the current folder, since users cannot
write into a site's prefix."""
import os

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALLED = not os.path.isfile(os.path.join(_ROOT, "CMakeLists.txt"))
BINARY = os.path.normpath(os.path.join(_ROOT, "..", "bin", "gpurelay") if INSTALLED
                          else os.path.join(_ROOT, "build", "app", "gpurelay"))


def outputs(name):
    """The default folder outputs/NAME."""
    return os.path.join(os.path.abspath("outputs") if INSTALLED else os.path.join(_ROOT, "outputs"),
                        name)
