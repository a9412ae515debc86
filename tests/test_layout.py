"""The layout rules that keep the pipeline readable: checks see the world only through Facts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "opdoctor"
CHECKS = sorted(p for p in (SRC / "checks").glob("*.py") if p.name != "__init__.py")
ALLOWED = ("opdoctor.facts", "opdoctor.model", "opdoctor.codes", "opdoctor.checks.base")
# Side effects belong to facts: a check that needs a process, a walk or another file asks Facts.
FORBIDDEN_STDLIB = ("subprocess", "shutil", "mmap", "ctypes", "socket", "multiprocessing")


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


@pytest.mark.parametrize("path", CHECKS, ids=lambda p: p.name)
def test_checks_import_only_facts_model_codes_base(path: Path) -> None:
    imports = _imports(path)  # one parse (probe.py's takes ~0.5 s)
    bad = [f"{path.name}:{line}: imports {mod}" for line, mod in imports
           if mod.startswith("opdoctor") and mod != "opdoctor"
           and not any(mod == a or mod.startswith(a + ".") for a in ALLOWED)]
    bad += [f"{path.name}:{line}: imports {mod} (side effects belong in facts/)"
            for line, mod in imports if mod.split(".")[0] in FORBIDDEN_STDLIB]
    assert not bad, "\n".join(bad)


def test_the_rule_catches_a_violation(tmp_path: Path) -> None:
    """The import scanner sees both import forms (a rule that cannot fail proves nothing)."""
    f = tmp_path / "x.py"
    f.write_text("import subprocess\nfrom opdoctor.pipeline import run_check\n")
    assert [m for _l, m in _imports(f)] == ["subprocess", "opdoctor.pipeline"]


def test_stages_are_folders() -> None:
    for stage in ("targets", "facts", "checks", "verdict", "report", "explain", "cli"):
        assert (SRC / stage / "__init__.py").is_file(), stage
    assert (SRC / "pipeline.py").is_file() and (SRC / "facts" / "frameworks.py").is_file()


def test_readme_code_tables_are_generated() -> None:
    """The README's code tables are what `make readme` generates from the catalog."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "update_readme", SRC.parent.parent / "native" / "update_readme.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = (SRC.parent.parent / "README.md").read_text(encoding="utf-8")
    assert "<!-- codes: registration -->" in text and "<!-- code-allocation -->" in text
    assert mod.render(text) == text, "README code tables drifted: run `make readme`"
    # Every code of the catalog is in some generated table.
    from opdoctor.checks import load_registry

    missing = [c for c in load_registry(with_plugins=False).catalog if f"| {c} |" not in text]
    assert not missing, missing
