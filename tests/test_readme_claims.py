"""The README's checkable claims match the program: the exit-code table is the CLI's, every
`opdoctor COMMAND --option` it shows exists, every command is in it, the codes it names exist,
and the set-up facts it states (versions downloaded, where skip reasons appear) are the
Makefile's and pyproject's. (The generated code tables are checked in test_layout.py.)"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import typer.main

from opdoctor.checks import load_registry
from opdoctor.cli.app import EXIT_HELP, app
from opdoctor.cli.errors import Exit
from opdoctor.codes import RETIRED
from tests.helpers import cli_proc

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _section(title: str) -> str:
    m = re.search(rf"^(#+) {re.escape(title)}\n(.*?)(?=^#{{1,3}} )", README, re.M | re.S)
    assert m, f"README has no section {title!r}"
    return m.group(2)


def _code() -> list[str]:
    """Every line of code in the README: fenced blocks, and inline `spans`."""
    lines: list[str] = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", README, re.M | re.S):
        lines += block.splitlines()
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", README, flags=re.M | re.S)
    lines += re.findall(r"`([^`\n]+)`", prose)
    return lines


def _options() -> dict[str, set[str]]:
    """Each command's option names (and the top level's, under "")."""
    group = typer.main.get_command(app)
    out = {"": {o for p in group.params for o in (*p.opts, *p.secondary_opts)}
           | {"--debug", "--help"}}
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        out[name] = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
        out[name] |= out[""]  # --debug is accepted anywhere
    return out


def test_exit_code_table_is_the_clis() -> None:
    table = _section("Exit codes")
    rows = dict(re.findall(r"^\| (\d) \| (.+) \|$", table, re.M))
    assert {int(c) for c in rows} == {int(e) for e in Exit}
    # The same codes, in the same order, in `opdoctor --help`.
    assert [int(c) for c in re.findall(r"(\d) [a-z]", EXIT_HELP)] == sorted(int(e) for e in Exit)
    root_help = " ".join(cli_proc("--help").out.split())
    assert " ".join(EXIT_HELP.split()) in root_help
    # Row 2 names the input-level codes: each exists, and each is one a target error carries.
    catalog = load_registry().catalog
    named = set(re.findall(r"OD\d{3}", rows["2"]))
    assert named >= {"OD401", "OD402", "OD403", "OD414", "OD415"}, named
    assert all(c in catalog for c in named)


def test_every_command_and_option_shown_exists() -> None:
    options = _options()
    shown: set[str] = set()
    for line in _code():
        for m in re.finditer(r"(?<![\w/.-])opdoctor((?:\s+--?[\w-]+)*)\s+([a-z][a-z-]*)?", line):
            cmd = m.group(2) or ""
            if cmd and cmd not in options:
                continue  # "opdoctor reads …" in a comment, not a command
            shown.add(cmd)
            rest = re.split(r"[#|;→]|&&|\s—\s", line[m.end():])[0]
            for opt in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", m.group(1) + " " + rest):
                assert opt in options[cmd], f"README shows `opdoctor {cmd} {opt}`: {line!r}"
    # Every command is shown at least once.
    assert set(options) - {""} <= shown, set(options) - shown


def test_codes_named_in_the_readme_exist() -> None:
    catalog = load_registry().catalog
    named = set(re.findall(r"\bOD\d{3}\b", README))
    unknown = {c for c in named if c not in catalog and c not in RETIRED}
    assert not unknown, unknown
    assert set(catalog) <= named  # every code is documented (the generated tables)


def test_set_up_facts_are_the_makefiles() -> None:
    quick = _section("Quick start")
    assert "make demo" in quick and "make test" in quick
    for target in ("demo", "test"):
        assert re.search(rf"^{target}:", MAKEFILE, re.M)
    torch_pin = next(d for d in PYPROJECT["project"]["optional-dependencies"]["dev"]
                     if d.startswith("torch=="))
    assert f"`{torch_pin}`" in quick
    tf = re.search(r"^TF_VERSION := (\S+)", MAKEFILE, re.M)
    assert tf and f"tensorflow-cpu=={tf.group(1)}" in quick
    tv = re.search(r"torchvision-([\d.]+)/\.ready", MAKEFILE)
    assert tv and f"torchvision=={tv.group(1)}" in quick
    # Skip reasons are printed where the README says: the -ra summary of `make test`'s pytest.
    assert "`-ra`" in quick
    assert "-ra" in PYPROJECT["tool"]["pytest"]["ini_options"]["addopts"].split()
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", MAKEFILE, re.M)
    assert recipe and "pytest" in recipe.group(1) and "-rN" not in recipe.group(1)


def test_static_is_described_as_it_behaves() -> None:
    """--static never loads the library, but may start the target interpreter: both in the
    help and in the README."""
    helptext = " ".join(cli_proc("check", "--help").out.split())
    assert "never load or execute the library" in helptext
    assert "interpreter may still be started" in helptext
    text = " ".join(README.split())
    assert "never loads the library" in text and "`--static`" in text
