"""How the Python tools talk to the user: --help, and bad input as "TOOL: reason", exit 2."""
import argparse
import os
import sys

EXIT_USAGE = 2
HELP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "help")


class UsageError(Exception):
    """Input the tool cannot use: said in one line, exit 2."""


class Help(argparse.Action):
    """-h/--help (add_help=False): prints scripts/help/TOOL.txt, TOOL the parser's prog's name."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS)

    def __call__(self, parser, namespace, values, option_string=None):
        with open(os.path.join(HELP, os.path.basename(parser.prog) + ".txt"),
                  encoding="utf-8") as f:
            sys.stdout.write(f.read())
        parser.exit()


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
