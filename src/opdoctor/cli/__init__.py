"""The command-line interface: the typer app (:mod:`opdoctor.cli.app`), the settings table
(:mod:`opdoctor.cli.settings`) and the bodies of the commands (:mod:`opdoctor.cli.commands`).

``main(argv) -> int`` is the console script's entry point.
"""

from opdoctor.cli.app import main

__all__ = ["main"]
