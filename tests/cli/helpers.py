"""Running the CLI in-process, as the tests do."""

from core.cli import main


def run(capsys, *argv):
    """(exit code, stdout, stderr) of one CLI call."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
