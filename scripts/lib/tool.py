"""What the Python tools of scripts/ share in how they end: bad input is one line on stderr,
"TOOL: reason", and exit 2."""
import sys

EXIT_USAGE = 2


class UsageError(Exception):
    """Input the tool cannot use: said in one line, exit 2."""


def run(name, main):
    """Exits with main(sys.argv[1:]), a UsageError said as 'NAME: reason' (exit 2)."""
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as err:
        print(f"{name}: {err}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def counted(number, noun, nouns):
    """'1 launch', '2 launches'."""
    return f"{number} {noun if number == 1 else nouns}"
