"""Prints the build directory (binaryDir) of a CMake configure preset.

Used by scripts/test and scripts/run to find the build tree of --preset NAME without
hard-coding it: the preset file is the one source of truth. Follows `inherits` and expands the
macros a binaryDir normally uses (${sourceDir}, ${sourceParentDir}, ${sourceDirName},
${presetName}, $env{NAME}).
"""

import argparse
import json
import os
import re
import sys


def load_presets(source_dir):
    presets = {}
    for name in ("CMakePresets.json", "CMakeUserPresets.json"):
        path = os.path.join(source_dir, name)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        for preset in data.get("configurePresets", []):
            presets[preset["name"]] = preset
    return presets


def find_binary_dir(presets, name, seen=()):
    if name in seen:
        raise ValueError(f"preset '{name}' inherits from itself")
    preset = presets.get(name)
    if preset is None:
        raise KeyError(name)
    if "binaryDir" in preset:
        return preset["binaryDir"]
    parents = preset.get("inherits", [])
    if isinstance(parents, str):
        parents = [parents]
    for parent in parents:
        found = find_binary_dir(presets, parent, seen + (name,))
        if found is not None:
            return found
    return None


def expand(text, source_dir, preset_name):
    macros = {
        "sourceDir": source_dir,
        "sourceParentDir": os.path.dirname(source_dir),
        "sourceDirName": os.path.basename(source_dir),
        "presetName": preset_name,
        "dollar": "$",
    }
    text = re.sub(r"\$env\{([^}]*)\}", lambda m: os.environ.get(m.group(1), ""), text)
    text = re.sub(r"\$\{([^}]*)\}", lambda m: macros.get(m.group(1), m.group(0)), text)
    if not os.path.isabs(text):
        text = os.path.join(source_dir, text)
    return os.path.normpath(text)


def main():
    parser = argparse.ArgumentParser(
        prog="preset_dir.py", description="Print the binaryDir of a CMake configure preset.")
    parser.add_argument("--source-dir", required=True, help="folder holding CMakePresets.json")
    parser.add_argument("preset", help="configure preset name")
    args = parser.parse_args()
    source_dir = os.path.abspath(args.source_dir)
    try:
        presets = load_presets(source_dir)
        if not presets:
            raise FileNotFoundError(f"no CMakePresets.json in {source_dir}")
        binary_dir = find_binary_dir(presets, args.preset)
    except KeyError:
        known = ", ".join(sorted(n for n, p in presets.items() if not p.get("hidden")))
        print(f"preset_dir.py: no configure preset '{args.preset}' (known: {known})",
              file=sys.stderr)
        return 2
    except (OSError, ValueError) as err:
        print(f"preset_dir.py: {err}", file=sys.stderr)
        return 2
    if binary_dir is None:
        print(f"preset_dir.py: preset '{args.preset}' sets no binaryDir", file=sys.stderr)
        return 2
    print(expand(binary_dir, source_dir, args.preset))
    return 0


if __name__ == "__main__":
    sys.exit(main())
