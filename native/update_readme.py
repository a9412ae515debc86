"""Regenerate the README's code tables from the code catalog (``make readme``).

Blocks look like ``<!-- codes: registration -->`` … ``<!-- /codes -->`` (one or more check
names, comma-separated) and ``<!-- code-allocation -->`` … ``<!-- /code-allocation -->``.
``--check`` exits 1 when the README differs from what the catalog generates (the test suite
runs it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from opdoctor.checks import load_registry
from opdoctor.checks.base import PIPELINE_CODES
from opdoctor.codes import RETIRED, RUN_NOTE_LABEL, markdown_table

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"(<!-- codes: ([\w,\- ]+) -->\n)(.*?)(<!-- /codes -->)", re.S)
ALLOC = re.compile(r"(<!-- code-allocation -->\n)(.*?)(<!-- /code-allocation -->)", re.S)


def allocation_table() -> str:
    """Which check family owns which code numbers, and the retired ones."""
    reg = load_registry(with_plugins=False)
    rows = ["| check family | causes | codes |", "| --- | --- | --- |"]
    for c in reg.checks:
        causes = ", ".join(str(int(x)) for x in c.causes)
        rows.append(f"| `{c.name}` | {causes} | {', '.join(d.code for d in c.codes)} |")
    # Codes the pipeline emits on behalf of any stage (OD190: a stage stopped at its budget).
    pipeline = ", ".join(d.code for d in PIPELINE_CODES)
    rows.append(f"| (pipeline) | {RUN_NOTE_LABEL} | {pipeline} |")
    retired = ", ".join(f"{old} → {new}" for old, new in sorted(RETIRED.items())) or "none"
    return "\n".join(rows) + f"\n\nRetired codes (never reused; `opdoctor explain` redirects): " \
        f"{retired}.\n"


def render(text: str) -> str:
    """The README with every generated block rewritten."""
    reg = load_registry(with_plugins=False)
    by_name = {c.name: c.codes for c in reg.checks}
    by_name["pipeline"] = PIPELINE_CODES  # not a check: codes about the run itself

    def table(m: re.Match[str]) -> str:
        names = [n.strip() for n in m.group(2).split(",")]
        docs = [d for n in names for d in by_name[n]]
        return m.group(1) + markdown_table(docs) + m.group(4)

    text = BLOCK.sub(table, text)
    return ALLOC.sub(lambda m: m.group(1) + allocation_table() + m.group(3), text)


def main(argv: list[str]) -> int:
    """Rewrite README.md, or with --check report whether it is up to date."""
    old = README.read_text(encoding="utf-8")
    new = render(old)
    if "--check" in argv:
        if new != old:
            print("README.md code tables are out of date: run `make readme`")
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
