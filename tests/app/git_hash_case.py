"""The git hash a build reports is the source tree's own commit, worked out at build time.

usage: git_hash_case.py --cmake CMAKE --script app/git_hash.cmake

Runs the build step (app/git_hash.cmake) on trees made here: a repository of its own (its commit,
then "-dirty" after an edit, then the next commit's hash: never stale), a tree unpacked inside
another repository (which must not lend its commit: "unknown"), and a tree outside any
repository ("unknown"). The header is rewritten only when the hash changes.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def git(tree, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    return subprocess.run(["git", "-C", tree] + list(args), check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def make_repo(tree):
    os.makedirs(tree, exist_ok=True)
    git(tree, "init", "-q")
    with open(os.path.join(tree, "a.txt"), "w") as f:
        f.write("one\n")
    git(tree, "add", "a.txt")
    git(tree, "commit", "-q", "-m", "one")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cmake", required=True)
    parser.add_argument("--script", required=True)
    opts = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        header = os.path.join(tmp, "git_hash.hpp")

        def reported(tree):
            subprocess.run([opts.cmake, "-DSOURCE_DIR=" + tree, "-DOUTPUT=" + header, "-P",
                            opts.script], check=True)
            text = open(header).read()
            found = re.search(r'kGitHash = "([^"]*)";', text)
            if not found:
                fail(f"no kGitHash in the header: {text!r}")
            return found.group(1)

        own = os.path.join(tmp, "own")
        make_repo(own)
        commit = git(own, "rev-parse", "--short=12", "HEAD")
        if reported(own) != commit:
            fail(f"a repository of its own reports {reported(own)!r}, expected {commit!r}")
        before = os.stat(header).st_mtime_ns
        time.sleep(0.05)
        reported(own)
        if os.stat(header).st_mtime_ns != before:
            fail("the header was rewritten though the hash did not change")
        with open(os.path.join(own, "a.txt"), "a") as f:
            f.write("two\n")
        if reported(own) != commit + "-dirty":
            fail(f"an edited tree reports {reported(own)!r}, expected {commit}-dirty")
        git(own, "commit", "-q", "-am", "two")
        later = git(own, "rev-parse", "--short=12", "HEAD")
        if reported(own) != later:
            fail(f"after a new commit the build reports {reported(own)!r}, expected {later!r}")

        # A tarball unpacked inside another repository: that repository's commit is not ours.
        outer = os.path.join(tmp, "outer")
        make_repo(outer)
        unpacked = os.path.join(outer, "vendor", "gpurelay-0.1.0")
        os.makedirs(unpacked)
        if reported(unpacked) != "unknown":
            fail(f"a tree inside another repository reports {reported(unpacked)!r}")

        loose = os.path.join(tmp, "loose")
        os.makedirs(loose)
        env_ceiling = os.environ.get("GIT_CEILING_DIRECTORIES")
        os.environ["GIT_CEILING_DIRECTORIES"] = tmp  # /tmp itself may sit in a repository
        if reported(loose) != "unknown":
            fail(f"a tree outside any repository reports {reported(loose)!r}")
        if env_ceiling is None:
            del os.environ["GIT_CEILING_DIRECTORIES"]
    print("ok: the source tree's own commit, -dirty, never stale, unknown elsewhere")


if __name__ == "__main__":
    main()
