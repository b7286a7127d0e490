from tilecheck.cli import entry

entry()
