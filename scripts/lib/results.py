"""Reading the results CSV and the JSON summary; a figure withheld (empty, null) reads as None."""
import csv
import math

# The columns that describe a run's configuration (the rest are measurements or provenance).
CONFIG_COLUMNS = [
    "world_size", "pairs", "backend", "transport", "gpu_name", "dtype", "elements",
    "tensor_bytes", "steps", "warmup", "depth", "overlap", "blocking", "graphs", "c_elements",
    "c_iterations", "pairing", "chunk", "pattern", "group_size",
]
# A count is named in the largest binary unit it is a whole number of.
SIZE_UNITS = [("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)]


def number(value):
    """A figure as a float, or None where there is none (null, empty, NaN, not a number)."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def size_text(count):
    """A count as a size gpurelay reads, in Ki/Mi/Gi/Ti where it is a whole number of them."""
    count = int(count)
    for suffix, unit in SIZE_UNITS:
        if count >= unit and count % unit == 0:
            return f"{count // unit}{suffix}"
    return str(count)


def read_csv(path):
    """(the header's names, or None for an empty file; the rows as dicts)."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def cases(summary):
    """A summary's cases: those of a multi-size summary, or the summary itself."""
    return summary["cases"] if "cases" in summary else [summary]
