"""CI gating: every output format on a real wheel (good and broken), config, overrides,
baselines, directory walking, and `opdoctor scan` over the dev venv."""

from __future__ import annotations

import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.conftest import FIX, ROOT, fixture, reference
from tests.helpers import cli, cli_proc

SARIF_SCHEMA = json.loads((ROOT / "tests/resources/sarif-schema-2.1.0.json").read_text())


def wheel(kind: str) -> str:
    found = sorted((FIX / "wheels" / kind).glob("*.whl"))
    assert found, f"wheel fixture {kind} missing: run `make fixtures`"
    return str(found[0])


@pytest.mark.parametrize("kind", ["good", "abi"])
def test_sarif_validates_and_carries_findings(capsys: pytest.CaptureFixture[str],
                                              kind: str) -> None:
    res = cli(capsys, "check", "--static", "-f", "sarif", wheel(kind))
    log = res.json()
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "opdoctor"
    results = run["results"]
    if kind == "good":
        assert res.code == 0 and results == []
    else:
        assert res.code == 1
        assert "OD303" in {r["ruleId"] for r in results}
        rule = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "OD303")
        assert "Why it matters" in rule["help"]["markdown"]
        loc = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert loc.endswith(".whl!/myop/libmyop.so")


@pytest.mark.parametrize("kind", ["good", "abi"])
def test_junit(capsys: pytest.CaptureFixture[str], kind: str) -> None:
    res = cli(capsys, "check", "--static", "-f", "junit", wheel(kind))
    root = ET.fromstring(res.out)
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert {c.get("name") for c in cases} >= {"integrity", "dependencies", "symbols",
                                              "cxx-abi", "registration", "import-chain"}
    failures = [c for c in cases if c.find("failure") is not None]
    if kind == "good":
        assert res.code == 0 and failures == [] and suite.get("failures") == "0"
    else:
        assert res.code == 1
        abi = next(c for c in cases if c.get("name") == "cxx-abi")
        fail = abi.find("failure")
        assert fail is not None and fail.get("type") == "OD303"
        assert "fix: rebuild with -D_GLIBCXX_USE_CXX11_ABI=1" in (fail.text or "")


@pytest.mark.parametrize("kind", ["good", "abi"])
def test_github_annotations(capsys: pytest.CaptureFixture[str], kind: str) -> None:
    res = cli(capsys, "check", "--static", "-f", "github", wheel(kind))
    lines = res.out.splitlines()
    errors = [ln for ln in lines if ln.startswith("::error ")]
    if kind == "good":
        assert res.code == 0 and errors == []
        assert lines[-1].endswith("No problem found.")
    else:
        assert res.code == 1
        assert any("title=OD303 C++11 ABI differs from torch's::" in ln for ln in errors)
        assert all("\n" not in ln for ln in errors)
        assert "%0Afix: rebuild with" in errors[0] or any("%0Afix:" in ln for ln in errors)


def test_output_file_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.sarif"
    res = cli(capsys, "check", "--static", "-f", "sarif", "-o", str(out), wheel("abi"))
    assert res.code == 1 and res.out == ""
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(json.loads(out.read_text()))


def test_one_run_writes_every_format_asked_for(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`--also-write FORMAT=FILE`: the text on stdout and the same findings as SARIF, JSON and
    JUnit files, from one run (each equal to what a run of that format alone writes)."""
    files = {f: tmp_path / f"r.{f}" for f in ("sarif", "json", "junit")}
    res = cli(capsys, "check", "--static", wheel("abi"),
              *[a for f, p in files.items() for a in ("--also-write", f"{f}={p}")])
    assert res.code == 1 and "OD303" in res.out and not res.out.lstrip().startswith("{")
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(json.loads(files["sarif"].read_text()))
    ET.fromstring(files["junit"].read_text())
    both = json.loads(files["json"].read_text())
    alone = cli(capsys, "check", "--static", "-f", "json", wheel("abi")).json()
    assert both["exit_code"] == alone["exit_code"] == 1
    assert [f["code"] for r in both["reports"] for f in r["findings"]] == \
        [f["code"] for r in alone["reports"] for f in r["findings"]]
    # In the configuration too; the command line's --format/--output stay the main report.
    (tmp_path / "opdoctor.toml").write_text(f'also-write = {{ json = "{files["json"]}" }}\n')
    files["json"].unlink()
    res = cli_proc("check", "--static", "-f", "github", wheel("abi"), cwd=tmp_path)
    assert res.code == 1 and res.out.startswith("::error")
    assert json.loads(files["json"].read_text())["exit_code"] == 1


@pytest.mark.parametrize("extra, message", [
    (["--also-write", "yaml=r.yaml"], "unknown format 'yaml'"),
    (["--also-write", "json"], "expects KEY=VALUE"),
    (["-o", "r.json", "--also-write", "json=r.json"], "given as the output of two reports"),
    (["--also-write", "json={lib}"], "is one of the inputs"),
])
def test_also_write_refuses_before_any_analysis(tmp_path: Path, extra: list[str],
                                                message: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    lib = wheel("abi")
    args = [e.format(lib=lib).replace("=r.", f"={tmp_path}/r.") for e in extra]
    args = [str(tmp_path / a) if a == "r.json" else a for a in args]
    res = cli(capsys, "check", "--static", *args, lib)
    assert res.code == 3 and message in res.err and "Traceback" not in res.err, res.err
    assert res.out == "" and not any(tmp_path.iterdir())


def test_config_file_and_sources(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.opdoctor]\n'
        'expect-op = ["myop::weighted_product"]\nfail-on = "warning"\nstatic = true\n')
    res = cli_proc("config", "-f", "json", cwd=tmp_path)
    cfg = json.loads(res.out)
    assert cfg["expect-op"] == {"value": ["myop::weighted_product"],
                                "source": "pyproject.toml [tool.opdoctor]"}
    assert cfg["timeout"]["source"] == "default"
    checked = cli_proc("check", "-f", "json", str(reference()), cwd=tmp_path)
    doc = json.loads(checked.out)
    assert checked.code == 1 and doc["fail_on"] == "warning"
    assert "OD106" in [f["code"] for f in doc["reports"][0]["findings"]]
    # The command line wins over the file.
    override = cli_proc("check", "-f", "json", "--expect-op", "myop::weighted_sum",
                        str(reference()), cwd=tmp_path)
    assert override.code == 0, override.out


def test_bad_config_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "opdoctor.toml").write_text('fail_on = "error"\n')
    res = cli_proc("check", str(reference()), cwd=tmp_path)
    assert res.code == 3 and "unknown key 'fail_on'" in res.err


def test_severity_override(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(fixture("integrity/textrel.so"))
    assert cli(capsys, "check", "--static", path).code == 0
    assert cli(capsys, "check", "--static", "--severity", "OD410=error", path).code == 1


def test_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bl = tmp_path / "baseline.json"
    res = cli(capsys, "check", "--static", "--write-baseline", str(bl), wheel("abi"))
    assert res.code == 0 and "wrote" in res.err
    again = cli(capsys, "check", "--static", "-f", "sarif", "--baseline", str(bl), wheel("abi"))
    assert again.code == 0
    states = {r.get("baselineState") for r in again.json()["runs"][0]["results"]}
    assert states == {"unchanged"}
    new = cli(capsys, "check", "--static", "--baseline", str(bl),
              str(fixture("loader/other_torch.so")))
    assert new.code == 1
    (tmp_path / "bad.json").write_text("{}")
    assert cli(capsys, "check", "--baseline", str(tmp_path / "bad.json"), wheel("abi")).code == 3


def test_directory_is_walked(capsys: pytest.CaptureFixture[str]) -> None:
    res = cli(capsys, "check", "--static", "-f", "json", str(FIX / "cuda"))
    paths = [r["target"]["path"] for r in res.json()["reports"]]
    assert len(paths) == 3 and all(p.endswith(".so") for p in paths)


def test_bad_wheel_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken-0.1-py3-none-any.whl"
    bad.write_text("not a zip")
    res = cli(capsys, "check", str(bad))
    assert res.code == 2 and "not a valid wheel" in res.err


def test_scan_dev_venv(tmp_path: Path) -> None:
    """One scan of the dev venv: the table on stdout, the reports as JSON and JUnit from the
    same run (`--also-write`, as a CI job publishes them)."""
    js, junit = tmp_path / "scan.json", tmp_path / "scan.xml"
    res = cli_proc("scan", "--also-write", f"json={js}", "--also-write", f"junit={junit}",
                   env={"NO_COLOR": "1"}, timeout=600)
    assert res.code == 0, res.out + res.err
    assert "libtorch_cpu.so" in res.out and "clean" in res.out
    last = res.out.strip().splitlines()[-1]
    assert last.endswith("exit 0") and " 0 with errors · 0 with warnings only" in last
    doc = json.loads(js.read_text())
    reports = doc["reports"]
    assert doc["exit_code"] == 0 and len(reports) == int(re.search(
        r"\((\d+) libraries\)", res.out).group(1))  # type: ignore[union-attr]
    assert any(r["target"]["path"].endswith("libtorch_cpu.so") for r in reports)
    assert all(r["findings"] == [] for r in reports)
    assert len(ET.fromstring(junit.read_text()).findall(".//testcase")) >= len(reports)


@pytest.mark.parametrize("extra, message", [
    (["--also-write", "yaml=r.yaml"], "unknown format 'yaml'"),
    (["--also-write", "json"], "expects KEY=VALUE"),
    (["-o", "r.json", "--also-write", "json=r.json"], "given as the output of two reports"),
])
def test_scan_also_write_refuses_before_scanning(tmp_path: Path, extra: list[str],
                                                 message: str) -> None:
    args = [e.replace("=r.", f"={tmp_path}/r.") for e in extra]
    args = [str(tmp_path / a) if a == "r.json" else a for a in args]
    res = cli_proc("scan", *args, timeout=120)
    assert res.code == 3 and message in res.err and "Traceback" not in res.err, res.err
    assert res.out == "" and not any(tmp_path.iterdir())


def _venv_over_dev(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A venv (no pip) whose site-packages reaches the dev environment's (torch, as there):
    (venv, its site-packages, the dev site-packages)."""
    import subprocess
    import sys

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=60)
    site = next(venv.glob("lib/python3*/site-packages"))
    dev_site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    (site / "dev.pth").write_text(f"{dev_site}\n")
    return venv, site, dev_site


def test_integrations_parse(tmp_path: Path) -> None:
    import subprocess
    import sys

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    (step,) = [step["run"] for step in action["runs"]["steps"] if "opdoctor check" in step["run"]]
    # The action's check step as GitHub runs it (bash, inputs substituted; --static for speed):
    # one run annotates the pull request and writes the SARIF file code scanning uploads.
    sarif = tmp_path / "opdoctor.sarif"
    for key, value in {"python": sys.executable, "sarif": str(sarif), "args": "--static",
                       "paths": wheel("abi")}.items():
        step = step.replace("${{ inputs." + key + " }}", value)
    assert "${{" not in step
    p = subprocess.run(["bash", "-e", "-c", step], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert p.returncode == 1 and p.stdout.startswith("::error"), p.stdout + p.stderr
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(json.loads(sarif.read_text()))
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hooks[0]["id"] == "opdoctor" and hooks[0]["entry"].startswith("opdoctor check")


def test_scan_reads_the_pythonpath_a_job_imports_from(tmp_path: Path) -> None:
    """A package on PYTHONPATH is what the job imports (it comes before site-packages on
    sys.path): `scan` checks its framework libraries too — before, a broken xformers on
    PYTHONPATH left the scan clean with exit 0."""
    import subprocess
    import sys

    pkg = tmp_path / "pp" / "ppkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (tmp_path / "op.c").write_text("int op_fn(void) { return 1; }\n")
    torch_lib = next(Path(sys.prefix).glob("lib/python3*/site-packages/torch/lib"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "_ops.so"), str(tmp_path / "op.c"),
                    f"-L{torch_lib}", "-Wl,--no-as-needed", "-lc10"], check=True, timeout=60)
    js = cli_proc("scan", "-f", "json", env={"PYTHONPATH": str(tmp_path / "pp")}, timeout=600)
    reports = json.loads(js.out)["reports"]
    mine = [r for r in reports if r["target"]["path"] == str(pkg / "_ops.so")]
    assert len(mine) == 1, [r["target"]["path"] for r in reports]
    assert js.code == 1  # it links torch and registers nothing (OD101): the scan says so


def test_scan_reads_what_a_start_up_hook_puts_on_sys_path(tmp_path: Path) -> None:
    """Survey 23's S2: a cluster's sitecustomize.py inserts a shared directory first on
    sys.path; every job imports the older torchvision there. `scan` read site-packages and
    PYTHONPATH only: it checked the venv's own, hidden copy and exited 0. The directories the
    job's sys.path holds besides them are scanned too."""
    import subprocess

    hook, shared = tmp_path / "hook", tmp_path / "shared"
    pkg = shared / "hookpkg"
    for d in (hook, pkg):
        d.mkdir(parents=True)
    (hook / "sitecustomize.py").write_text(f"import sys\nsys.path.insert(0, {str(shared)!r})\n")
    (pkg / "__init__.py").write_text("")
    (tmp_path / "op.c").write_text("int op_fn(void) { return 1; }\n")
    torch_lib = next(Path(sys.prefix).glob("lib/python3*/site-packages/torch/lib"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "_ops.so"), str(tmp_path / "op.c"),
                    f"-L{torch_lib}", "-Wl,--no-as-needed", "-lc10"], check=True, timeout=60)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", "import hookpkg; print(hookpkg.__file__)"],
                          env={**env, "PYTHONPATH": str(hook)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert real.stdout.strip() == str(pkg / "__init__.py"), real.stderr
    # (opdoctor's own process runs the hook too: `src` after it on PYTHONPATH)
    js = cli_proc("scan", "-f", "json", env={"PYTHONPATH": f"{hook}{os.pathsep}{ROOT / 'src'}"},
                  timeout=600)
    reports = json.loads(js.out)["reports"]
    mine = [r for r in reports if r["target"]["path"] == str(pkg / "_ops.so")]
    assert len(mine) == 1, [r["target"]["path"] for r in reports]
    assert js.code == 1  # it links torch and registers nothing (OD101): the scan says so


@pytest.mark.probe
def test_scan_checks_the_source_trees_of_editable_installs(tmp_path: Path) -> None:
    """A developer's own operator package installed with `pip install -e .` lives outside
    site-packages: setuptools' finder maps a flat-layout project's package to its source tree,
    and a src-layout project's `.pth` line puts its src/ on sys.path. `scan` walked only
    site-packages and PYTHONPATH, so it never checked the package the developer works on. Here
    a venv has both (its torch from the dev environment through a `.pth` line as well); Python
    imports each package from its tree, and the scan checks both libraries."""
    import shutil
    import subprocess

    from tests.conftest import SKIP

    if (SKIP / "editable.txt").exists():
        pytest.skip("editable install not made here: " + (SKIP / "editable.txt").read_text())
    made = FIX / "python" / "editable" / "ok"
    venv, site, dev_site = _venv_over_dev(tmp_path)
    # the fixture's editable install (a real `pip install -e`), its finder mapping edpkg to
    # a copy of its tree here
    tree = tmp_path / "flat"
    shutil.copytree(made.parent / "ok-src", tree)
    for f in next(made.glob("lib/python3*/site-packages")).iterdir():
        if f.name.startswith("__editable__"):
            text = f.read_text().replace(str(made.parent / "ok-src"), str(tree))
            (site / f.name).write_text(text)
    src = tmp_path / "srclayout" / "src"
    (src / "srcops").mkdir(parents=True)
    (src / "srcops" / "__init__.py").write_text("")
    (site / "__editable__.srcops-0.1.pth").write_text(f"{src}\n")
    (tmp_path / "op.c").write_text("int op_fn(void) { return 1; }\n")
    torch_lib = dev_site / "torch" / "lib"
    libs = [tree / "edpkg" / "_ops.so", src / "srcops" / "_ops.so"]
    for lib in libs:
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "op.c"),
                        f"-L{torch_lib}", "-Wl,--no-as-needed", "-lc10"], check=True, timeout=60)
    py = venv / "bin" / "python"
    real = subprocess.run([str(py), "-c", "import torch, edpkg, srcops; print(edpkg.__file__, "
                           "srcops.__file__)"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={k: v for k, v in os.environ.items()
                                             if k != "PYTHONPATH"})
    assert real.stdout.split() == [str(tree / "edpkg" / "__init__.py"),
                                   str(src / "srcops" / "__init__.py")], real.stderr
    js = cli_proc("scan", "--python", str(py), "-f", "json", timeout=600, cwd=tmp_path)
    paths = {r["target"]["path"] for r in json.loads(js.out)["reports"]}
    assert {str(lib) for lib in libs} <= paths, sorted(paths)
    assert not [p for p in paths if "/build/" in p]  # a project's build tree is not walked


def test_scan_table_shows_a_few_ops_and_counts_the_rest() -> None:
    """A library's whole inventory in the scan table made 72 libraries 1,538 lines long: the
    cell keeps the first ops and says how many more (the report and the JSON list them all)."""
    from opdoctor.cli.commands import SCAN_OPS_SHOWN, _ops_cell

    few = "; ".join(f"ns::op{i} [CPU]" for i in range(SCAN_OPS_SHOWN))
    assert _ops_cell(few) == few
    many = "; ".join(f"ns::op{i} [CPU]" for i in range(SCAN_OPS_SHOWN + 7))
    cell = _ops_cell(many)
    assert cell.endswith("; … +7 more") and cell.count("ns::op") == SCAN_OPS_SHOWN


@pytest.mark.probe
def test_an_expected_op_is_the_wheels_not_each_librarys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fbgemm-gpu-cpu 1.8's wheel holds 19 libraries and its op in one of them: `check
    dist/*.whl --expect-op …` (this README's CI line) said OD106 "not defined by this library"
    for the 18 others — exit 1 on a healthy wheel (survey 20). The expectation is the wheel's
    package's: met when one of its libraries defines the op with the expected kernels; an op
    that none defines still fails the gate, with one error (not one per library)."""
    import subprocess
    import sys
    import zipfile

    helper = tmp_path / "helper.c"
    helper.write_text("int helper(void) { return 7; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libhelper.so"),
                    str(helper)], check=True, timeout=60)
    # one of fbgemm's other libraries: stripped, linking torch, the schema of another op
    (tmp_path / "o.c").write_text('const char *s = "other_op(Tensor a) -> Tensor";\n'
                                  "const char *get(void) { return s; }\n")
    torch_lib = next(Path(sys.prefix).glob("lib/python3*/site-packages/torch/lib"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-s", "-o", str(tmp_path / "libother.so"),
                    str(tmp_path / "o.c"), f"-L{torch_lib}", "-Wl,--no-as-needed", "-lc10"],
                   check=True, timeout=60)
    # what torch itself says of the reference: the op with a CPU kernel
    probe = subprocess.run([sys.executable, "-c", "import sys, torch; torch.ops.load_library("
                            "sys.argv[1]); print(torch._C._dispatch_has_kernel_for_dispatch_key("
                            "'myop::weighted_sum', 'CPU'))", str(reference())],
                           capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip() == "True", probe.stderr
    wheel = tmp_path / "twolib-1.0-cp311-cp311-linux_x86_64.whl"
    info = "twolib-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("twolib/__init__.py", "import ctypes, os\nimport torch\nHERE = "
                    "os.path.dirname(__file__)\nctypes.CDLL(os.path.join(HERE, 'libhelper.so'))"
                    "\ntorch.ops.load_library(os.path.join(HERE, 'libmyop.so'))\n")
        zf.write(reference(), "twolib/libmyop.so")
        zf.write(tmp_path / "libhelper.so", "twolib/libhelper.so")
        zf.write(tmp_path / "libother.so", "twolib/libother.so")
        zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: twolib\nVersion: 1.0\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\n")
        zf.writestr(f"{info}/RECORD", f"twolib/__init__.py,,\ntwolib/libmyop.so,,\n"
                    f"twolib/libhelper.so,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
    res = cli(capsys, "check", "--static", "-f", "json", "--expect-op",
              "myop::weighted_sum[CPU]", str(wheel))
    reports = res.json()["reports"]
    assert res.code == 0 and len(reports) == 3, [r["diagnosis"]["summary"] for r in reports]
    od106 = [f for r in reports for f in r["findings"] if f["code"] == "OD106"]
    # libother's is a note naming where the op is; the helper links no torch and registers
    # nothing (as an auditwheel-vendored library): it is not asked for the op at all
    assert [f["severity"] for f in od106] == ["info"], od106
    assert "the package twolib meets it: C++ libmyop.so defines myop::weighted_sum, with its " \
        "CPU kernel(s) in C++ libmyop.so" in od106[0]["message"], od106
    res = cli(capsys, "check", "--static", "-f", "json", "--expect-op", "myop::nope[CPU]",
              str(wheel))
    assert res.code == 1
    missing = {os.path.basename(r["target"]["path"]): [f["severity"] for f in r["findings"]
                                                      if f["code"] == "OD106"]
               for r in res.json()["reports"]}
    # told once, on the library that defines the op's namespace; a note on the others
    assert missing == {"libmyop.so": ["error"], "libhelper.so": [], "libother.so": ["info"]}, \
        missing


def test_scan_marks_a_warnings_only_verdict_apart_from_an_error(tmp_path: Path) -> None:
    """`scan` printed "cause 2: OD201" alike for a warning and an error (survey 20: 28 of
    MindSpore's libraries with a load-order warning read as 28 failures). In a venv whose
    site-packages holds the reference operator marked for an executable stack (a warning
    where glibc still loads it) and a torch-linked library that needs a library nowhere
    installed (an error: it cannot load), the first is "! … (warning)", the second "✗", and
    the last line counts them apart; a code found twice is said once, with its count."""
    import ctypes
    import struct
    import subprocess

    from opdoctor.facts import detect_host

    glibc = detect_host().glibc
    if glibc is None or glibc >= (2, 41):
        pytest.skip("this glibc refuses an executable stack: no warnings-only library to scan")
    venv, site, dev_site = _venv_over_dev(tmp_path)
    torch_lib = dev_site / "torch" / "lib"
    pkg = site / "scanpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import ctypes, os, torch\nHERE = os.path.dirname("
                                     "__file__)\ntorch.ops.load_library(os.path.join(HERE, "
                                     "'libmyop.so'))\nctypes.CDLL(os.path.join(HERE, "
                                     "'libneeds.so'))\n")
    data = bytearray(reference().read_bytes())  # execstack -s: PT_GNU_STACK gets PF_X
    phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from(
        "<HH", data, 54)
    for i in range(phnum):
        at = phoff + i * phentsize
        if struct.unpack_from("<I", data, at)[0] == 0x6474E551:
            struct.pack_into("<I", data, at + 4, struct.unpack_from("<I", data, at + 4)[0] | 1)
    (pkg / "libmyop.so").write_bytes(bytes(data))
    gone = tmp_path / "gone"
    gone.mkdir()
    for name in ("gone", "gone2"):
        (tmp_path / "g.c").write_text(f"int {name}_fn(void) {{ return 2; }}\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(gone / f"lib{name}.so"),
                        str(tmp_path / "g.c")], check=True, timeout=60)
    (tmp_path / "u.c").write_text("int gone_fn(void);\nint gone2_fn(void);\n"
                                  "int use(void) { return gone_fn() + gone2_fn(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(pkg / "libneeds.so"),
                    str(tmp_path / "u.c"), f"-L{gone}", "-lgone", "-lgone2", f"-L{torch_lib}",
                    "-Wl,--no-as-needed", "-lc10"], check=True, timeout=60)
    (gone / "libgone.so").unlink()
    (gone / "libgone2.so").unlink()
    with pytest.raises(OSError, match=r"libgone\.so: cannot open shared object file"):
        ctypes.CDLL(str(pkg / "libneeds.so"))
    res = cli_proc("scan", "--python", str(venv / "bin" / "python"), env={"NO_COLOR": "1"},
                   timeout=600, cwd=tmp_path)
    rows = {ln.split("│")[2].strip(): ln for ln in res.out.splitlines()
            if ln.count("│") >= 4 and "scanpkg" in ln}
    assert "! cause 4: OD412 (warning)" in rows["scanpkg/libmyop.so"], res.out
    # two libraries not found: the code once, with its count (MindSpore's grpc library
    # listed "OD201, OD201, …" fourteen times over four lines)
    assert "✗ cause 2: OD201 ×2" in rows["scanpkg/libneeds.so"], res.out
    assert res.out.strip().splitlines()[-1].endswith("1 with errors · 1 with warnings only · "
                                                     "exit 1"), res.out


@pytest.mark.parametrize(("keys", "code"), [("CPU", 0), ("CUDA", 1)])
def test_a_stripped_wheels_expected_cuda_kernel_needs_a_cuda_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], keys: str, code: int) -> None:
    """fbgemm-gpu-cpu 1.8's wheel is stripped: its op's schema is in .rodata without its
    namespace, and no kernel can be read statically. `--static --expect-op …[CPU]` is met
    (the schema is there, its kernels unverifiable — as for one library); `[CUDA]` is not
    when no library of the package is a CUDA build (none needs a CUDA library): the gate
    fails (survey 20's re-run: it said "No problem found")."""
    import subprocess
    import zipfile

    from opdoctor.facts.core import needed_names

    torch_lib = next(Path(sys.prefix).glob("lib/python3*/site-packages/torch/lib"))
    (tmp_path / "s.c").write_text('const char *schema = "weighted_sum(Tensor a, Tensor b) -> '
                                  'Tensor";\nconst char *get(void) { return schema; }\n')
    lib = tmp_path / "libstrip.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "s.c"),
                    f"-L{torch_lib}", "-Wl,--no-as-needed", "-lc10", "-s"], check=True,
                   timeout=60)
    assert not [n for n in needed_names(str(lib)) if "cuda" in n]  # a CPU build
    wheel = tmp_path / "strippkg-1.0-cp311-cp311-linux_x86_64.whl"
    info = "strippkg-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        # (torch first: libstrip.so finds libc10.so only in a process that imported it)
        zf.writestr("strippkg/__init__.py", "import ctypes, os\nimport torch\nctypes.CDLL("
                    "os.path.join(os.path.dirname(__file__), 'libstrip.so'))\n")
        zf.write(lib, "strippkg/libstrip.so")
        zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: strippkg\nVersion: 1.0\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\n")
        zf.writestr(f"{info}/RECORD", "")
    res = cli(capsys, "check", "--static", "-f", "json", "--expect-op",
              f"myop::weighted_sum[{keys}]", str(wheel))
    od106 = [f for r in res.json()["reports"] for f in r["findings"] if f["code"] == "OD106"]
    assert res.code == code, od106
