"""Prints a CMake configure preset's binaryDir (`inherits` followed, its macros expanded)."""

import argparse
import json
import os
import re
import sys


def binary_dir(presets, name, seen=()):
    """The preset's binaryDir, its own or the first of its parents'; None where none sets one."""
    if name in seen:
        raise ValueError(f"preset '{name}' inherits from itself")
    preset = presets[name]
    if "binaryDir" in preset:
        return preset["binaryDir"]
    parents = preset.get("inherits", [])
    for parent in [parents] if isinstance(parents, str) else parents:
        found = binary_dir(presets, parent, seen + (name,))
        if found is not None:
            return found
    return None


def expand(text, source_dir, preset_name):
    macros = {"sourceDir": source_dir, "sourceParentDir": os.path.dirname(source_dir),
              "sourceDirName": os.path.basename(source_dir), "presetName": preset_name,
              "dollar": "$"}
    text = re.sub(r"\$env\{([^}]*)\}", lambda m: os.environ.get(m.group(1), ""), text)
    text = re.sub(r"\$\{([^}]*)\}", lambda m: macros.get(m.group(1), m.group(0)), text)
    return os.path.normpath(os.path.join(source_dir, text))


def main():
    parser = argparse.ArgumentParser(
        prog="preset_dir.py", description="Print the binaryDir of a CMake configure preset.")
    parser.add_argument("--source-dir", required=True, help="folder holding CMakePresets.json")
    parser.add_argument("preset", help="configure preset name")
    args = parser.parse_args()
    source_dir = os.path.abspath(args.source_dir)
    presets = {}
    try:
        for name in ("CMakePresets.json", "CMakeUserPresets.json"):
            if os.path.exists(os.path.join(source_dir, name)):
                with open(os.path.join(source_dir, name), encoding="utf-8") as f:
                    presets.update({p["name"]: p for p in json.load(f).get("configurePresets", [])})
        if not presets:
            raise FileNotFoundError(f"no CMakePresets.json in {source_dir}")
        found = binary_dir(presets, args.preset)
        if found is None:
            raise ValueError(f"preset '{args.preset}' sets no binaryDir")
    except KeyError:
        known = ", ".join(sorted(n for n, p in presets.items() if not p.get("hidden")))
        print(f"preset_dir.py: no configure preset '{args.preset}' (known: {known})",
              file=sys.stderr)
        return 2
    except (OSError, ValueError) as err:
        print(f"preset_dir.py: {err}", file=sys.stderr)
        return 2
    print(expand(found, source_dir, args.preset))
    return 0


if __name__ == "__main__":
    sys.exit(main())
