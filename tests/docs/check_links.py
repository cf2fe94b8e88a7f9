#!/usr/bin/env python3
"""Every relative link of the documents a reader starts from resolves, as GitHub renders it.

  check_links.py [--root DIR] [FILE...]    check FILEs (default: the documents below), exit 1 on
                                           a stale link, one line each: FILE:LINE: LINK: why
  check_links.py --self-test               the checker against links it must pass and refuse

A link is `[text](target)`, `![alt](target)` or a definition `[name]: target`, outside code
blocks and code spans. Links with a scheme (https:, mailto:) are not followed. The path, taken
from the linking file's folder (from the root where it starts with /), must exist; an #anchor
must be a heading of the Markdown file it points to (or of the same file), slugged as GitHub
does: the heading's text lowercased, every character but letters, digits, marks, `_`, `-` and
spaces dropped, spaces made hyphens, and a repeated slug given -1, -2, ... in order.
"""
import os
import re
import sys
import tempfile
import unicodedata

DOCUMENTS = ["README.md", "docs/*.md", "scripts/README.md", "tests/README.md", "lab/README.md"]

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def slug(heading):
    """GitHub's anchor for a heading's Markdown text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = text.replace("`", "").replace("*", "")
    kept = (c for c in text.lower()
            if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return "".join(kept).replace(" ", "-")


def prose_lines(path):
    """(line number, text) of each line outside fenced code, code spans blanked."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield number, CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def anchors(path, cache={}):
    """The anchors GitHub gives a Markdown file: one per heading, and explicit <a> anchors."""
    if path not in cache:
        found, seen = set(), {}
        inside = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    inside = not inside
                    continue
                if inside:
                    continue
                found.update(HTML_ANCHOR.findall(line))
                heading = HEADING.match(line)
                if heading:
                    base = slug(heading.group(2))
                    count = seen.get(base, 0)
                    seen[base] = count + 1
                    found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def problem(root, source, target):
    """Why `target`, linked from `source`, does not resolve; None where it does."""
    if not target or SCHEME.match(target):
        return None
    path, _, anchor = target.partition("#")
    if path.startswith("/"):
        where = os.path.join(root, path.lstrip("/"))
    elif path:
        where = os.path.join(os.path.dirname(source), path)
    else:
        where = source
    where = os.path.normpath(where)
    if not os.path.exists(where):
        return "no such file"
    if not anchor:
        return None
    if not where.endswith(".md"):
        return "an anchor into a file that is not Markdown"
    if anchor not in anchors(where):
        return f"no heading makes #{anchor}"
    return None


def check(root, files):
    stale = []
    for source in files:
        for number, line in prose_lines(source):
            targets = INLINE.findall(line)
            definition = DEFINITION.match(line)
            if definition:
                targets.append(definition.group(1))
            for target in targets:
                why = problem(root, source, target)
                if why:
                    stale.append(f"{os.path.relpath(source, root)}:{number}: {target}: {why}")
    return stale


def documents(root):
    import glob
    files = []
    for pattern in DOCUMENTS:
        found = sorted(glob.glob(os.path.join(root, pattern)))
        if not found:
            sys.exit(f"check_links.py: no {pattern} under {root}")
        files += found
    return files


def self_test():
    """Headings against their slugs by GitHub's rules, and a tree of links each kept or refused."""
    slugs = {
        "Updating docs/PERFORMANCE.md": "updating-docsperformancemd",
        "A step the GPU drives itself (`launch = \"device\"`): not yet measured":
            "a-step-the-gpu-drives-itself-launch--device-not-yet-measured",
        "The stop vote: over the world, at a cadence, never waited for":
            "the-stop-vote-over-the-world-at-a-cadence-never-waited-for",
        "For site administrators: install, Spack, module, ReFrame":
            "for-site-administrators-install-spack-module-reframe",
        "How to run an A/B comparison properly": "how-to-run-an-ab-comparison-properly",
        "`timeout_s` and **µs**": "timeout_s-and-µs",
    }
    failures = [f"slug({h!r}) = {slug(h)!r}, not {s!r}" for h, s in slugs.items() if slug(h) != s]
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        with open(os.path.join(root, "docs", "B.md"), "w", encoding="utf-8") as f:
            f.write("# Title\n## Twice\n## Twice\n```\n## Not a heading\n```\n")
        with open(os.path.join(root, "A.md"), "w", encoding="utf-8") as f:
            f.write("# Top\n"
                    "[ok](docs/B.md) [ok](docs/B.md#twice) [ok](docs/B.md#twice-1) [ok](#top)\n"
                    "[ok](/docs/B.md#title) [ok](https://example.com/x#y) `[skip](missing.md)`\n"
                    "[bad](docs/C.md)\n[bad](docs/B.md#twice-2)\n[bad](#not-a-heading)\n"
                    "[bad](docs/B.md#not-a-heading)\n[x]: missing.md\n"
                    "```\n[skip](missing.md)\n```\n")
        found = [line.split(": ", 1)[0] for line in check(root, [os.path.join(root, "A.md")])]
        wanted = ["A.md:4", "A.md:5", "A.md:6", "A.md:7", "A.md:8"]
        if found != wanted:
            failures.append(f"stale links found at {found}, not {wanted}")
    for failure in failures:
        print(f"check_links.py --self-test: {failure}")
    return 1 if failures else 0


def main(argv):
    if argv[:1] == ["--self-test"]:
        return self_test()
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    if argv[:1] == ["--root"]:
        root, argv = os.path.abspath(argv[1]), argv[2:]
    files = [os.path.abspath(a) for a in argv] or documents(root)
    stale = check(root, files)
    for line in stale:
        print(line)
    print(f"check_links.py: {len(files)} documents, {len(stale)} stale link(s)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
