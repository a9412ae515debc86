"""Verdict truth on the extensions users build (issue #15): tinyop and its ordinary breakages.

Every fixture is built by `make truth` from tests/fixtures/truth/. Each test asserts opdoctor's
verdict and exit code *and* what really happens: the `real` fixture loads every library in a
forked child of one interpreter that imported torch (no probe, no mock), so a verdict is only
accepted when the real load or call fails or works as the test says.
"""

from __future__ import annotations

import glob
import json
import os
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from opdoctor.facts import CheckOptions
from opdoctor.pipeline import run_check
from tests.conftest import fixture
from tests.helpers import cli, cli_proc
from tests.torchfork import run_python

# Probes fork from one import of their framework per module (conftest.shared_zygotes).
pytestmark = pytest.mark.usefixtures("shared_zygotes")

TRUTH = "truth"
SYSLIB = Path("/usr/lib/x86_64-linux-gnu")
_REAL = textwrap.dedent(r"""
    import json, os, sys
    import torch
    SPACES = ("tinyop", "foo", "tiny_op")
    out = {}
    for job in json.loads(sys.argv[1]):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            res = {}
            try:
                if job.get("package"):
                    sys.path.insert(0, job["package"])
                    import tinyop  # noqa: F401
                elif job.get("ctypes"):
                    import ctypes
                    ctypes.CDLL(job["path"])
                else:
                    torch.ops.load_library(job["path"])
                res["loaded"] = True
                res["ops"] = sorted(n for n in torch._C._dispatch_get_all_op_names()
                                    if n.split("::")[0] in SPACES)
                if job.get("call"):
                    ns, op = job["call"].split("::")
                    try:
                        getattr(getattr(torch.ops, ns), op)(torch.ones(2), torch.ones(2), 2.0)
                        res["call"] = "ok"
                    except Exception as e:
                        res["call"] = str(e).splitlines()[0]
            except Exception as e:
                res["loaded"] = False
                res["error"] = f"{e} | {e.__cause__ or ''}"
            os.write(w, json.dumps(res).encode())
            os._exit(0)
        os.close(w)
        _, status = os.waitpid(pid, 0)
        data = os.read(r, 1 << 20)
        os.close(r)
        out[job["name"]] = {"status": os.waitstatus_to_exitcode(status),
                            **(json.loads(data) if data else {})}
    print("REAL" + json.dumps(out))
""")


def _path(rel: str) -> str:
    return str(fixture(f"{TRUTH}/{rel}"))


@pytest.fixture(scope="module")
def real() -> dict[str, dict[str, Any]]:
    """What torch and ld.so really do with each fixture (one interpreter, a fork per load)."""
    jobs = [
        {"name": "tinyop", "path": _path("tinyop.so"), "call": "tinyop::scale_add"},
        {"name": "assert", "path": _path("assert.so"), "call": "tinyop::scale_add"},
        {"name": "stripped", "path": _path("stripped.so"), "call": "tinyop::scale_add"},
        {"name": "inferred_stripped", "path": _path("inferred_stripped.so"),
         "call": "tinyop::scale_add"},
        {"name": "macro_ns", "path": _path("macro_ns.so"), "call": "foo::scale_add"},
        {"name": "typo", "path": _path("typo.so"), "call": "tinyop::scale_add"},
        {"name": "noreg", "path": _path("noreg.so")},
        {"name": "exit", "path": _path("exit.so")},
        {"name": "undef", "path": _path("undef.so")},
        {"name": "undef_global", "path": _path("undef_global.so")},
        {"name": "nolink", "path": _path("nolink/tinyop.so")},
        {"name": "nosections_tinyop", "path": _path("nosections/tinyop.so"),
         "call": "tinyop::scale_add"},
        {"name": "nosections_uses_dep", "path": _path("nosections/uses_dep.so"), "ctypes": 1},
        {"name": "nosections_missing_dep", "path": _path("nosections/missing_dep.so"),
         "ctypes": 1},
        {"name": "pkg_ok", "package": str(Path(_path("pkg_ok/tinyop/__init__.py")).parent.parent),
         "call": "tinyop::scale_add"},
        {"name": "pkg_noimport",
         "package": str(Path(_path("pkg_noimport/tinyop/__init__.py")).parent.parent),
         "call": "tinyop::scale_add"},
    ]
    proc = run_python(_REAL, json.dumps(jobs), timeout=600)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("REAL"))
    return json.loads(line[4:])  # type: ignore[no-any-return]


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    res = cli(capsys, "check", "-f", "json", *args)
    return res.code, res.json()["reports"][0]


def _codes(rep: dict[str, Any], severity: str | None = None) -> list[str]:
    return sorted(f["code"] for f in rep["findings"]
                  if severity is None or f["severity"] == severity)


# ------------------------------------------------------------------ false alarms (static)
def test_healthy_tinyop_really_works(real: dict[str, dict[str, Any]],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert real["tinyop"] == {"status": 0, "loaded": True, "ops": ["tinyop::scale_add"],
                              "call": "ok"}
    code, rep = _json(capsys, "--static", _path("tinyop.so"))
    assert code == 0 and _codes(rep) == []


def test_assert_strings_are_not_schemas(real: dict[str, dict[str, Any]],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert real["assert"]["call"] == "ok"  # a healthy Debug build
    data = Path(_path("assert.so")).read_bytes()
    assert b"tinyop::scale_add(const at::Tensor&" in data  # the __PRETTY_FUNCTION__ string
    code, rep = _json(capsys, "--static", _path("assert.so"))
    assert code == 0 and "OD102" not in _codes(rep), rep["findings"]
    ns = rep["sections"]["registration"]["namespaces"]
    assert ns == {"tinyop": {"defines": 1, "fragments": 0, "ops": ["scale_add"],
                             "kernels": ["CPU"]}}


def test_system_libraries_get_no_registration_findings(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    crypto = SYSLIB / "libcrypto.so.3"
    if not crypto.exists():
        pytest.skip("libcrypto.so.3 not installed")
    assert b"des(int)" in crypto.read_bytes()  # what was read as a schema
    res = cli(capsys, "check", "--static", str(crypto))
    assert res.code == 0, res.out
    sample = [str(crypto), *sorted(glob.glob(str(SYSLIB / "libLLVM*.so*")))[:1],
              *sorted(glob.glob(str(SYSLIB / "libpython3*.so*")))[:1]]
    for lib in sample:
        res = cli(capsys, "check", "-f", "json", "--static", lib)
        cause1 = [f for f in res.json()["reports"][0]["findings"] if f["cause"] == 1
                  and f["severity"] != "info" and f["code"] != "OD116"]
        assert cause1 == [], (lib, cause1)


def test_bounded_walk_of_system_libraries() -> None:
    """A directory walk (not a named library) of system libraries: no registration finding
    on any library that links no framework."""
    libs = sorted(p for p in glob.glob(str(SYSLIB / "lib*.so*"))
                  if not os.path.islink(p) and os.path.getsize(p) < (64 << 20))[:60]
    if not libs:
        pytest.skip(f"no libraries under {SYSLIB}")
    bad = []
    for lib in libs:
        rep = run_check(lib, CheckOptions())
        bad += [(lib, f.code) for f in rep.findings if f.cause == 1]
    assert bad == []


def test_stripped_healthy_extension_is_clean(real: dict[str, dict[str, Any]],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert real["stripped"]["call"] == "ok"
    code, rep = _json(capsys, "--static", _path("stripped.so"))
    assert code == 0 and _codes(rep, "error") == [] and "OD101" not in _codes(rep)


def test_stripped_library_without_any_schema_string_is_not_called_empty(
        real: dict[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    """``m.def("scale_add", &fn)`` lets torch infer the schema: stripped, the binary holds no
    schema string and no registrar symbol, yet torch registers and runs the op. What is left
    is the imported ``torch::Library`` constructor every TORCH_LIBRARY block calls."""
    assert real["inferred_stripped"]["ops"] == ["tinyop::scale_add"]
    assert real["inferred_stripped"]["call"] == "ok"
    code, rep = _json(capsys, "--static", _path("inferred_stripped.so"))
    assert code == 0 and _codes(rep, "error") == [] and "OD101" not in _codes(rep)
    assert rep["sections"]["registration"]["schemas"] == []  # really no schema string
    # The same library without the registration (compiled out, torch still linked) is OD101.
    code, rep = _json(capsys, "--static", str(fixture("registration/no_registration.so")))
    assert code == 1 and "OD101" in _codes(rep, "error")


def test_macro_namespace_is_read_from_the_registration_string(
        real: dict[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    assert real["macro_ns"]["ops"] == ["foo::scale_add"] and real["macro_ns"]["call"] == "ok"
    code, rep = _json(capsys, "--static", _path("macro_ns.so"))
    assert code == 0 and _codes(rep) == []
    assert list(rep["sections"]["registration"]["namespaces"]) == ["foo"]


# ------------------------------------------------------------------ false all-clears (static)
def test_namespace_typo_is_an_error(real: dict[str, dict[str, Any]],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert "Could not run 'tinyop::scale_add'" in real["typo"]["call"]
    code, rep = _json(capsys, "--static", _path("typo.so"))
    assert code == 1 and _codes(rep, "error") == ["OD115"]
    f = next(f for f in rep["findings"] if f["code"] == "OD115")
    assert "did you mean 'tinyop'" in f["message"] and f["cause"] == 1


def test_compiled_out_registration_named_explicitly(real: dict[str, dict[str, Any]],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert real["noreg"]["loaded"] and real["noreg"]["ops"] == []
    res = cli(capsys, "check", "--static", _path("noreg.so"))
    assert res.code == 0
    first = res.out.splitlines()[1]
    assert first.startswith("No error — 1 warning(s): this library registers no operator")
    _code, rep = _json(capsys, "--static", _path("noreg.so"))
    f = next(f for f in rep["findings"] if f["code"] == "OD116")
    assert f["severity"] == "warning"
    assert any("links no framework" in e for e in f["evidence"])
    assert any("compiled from: tinyop.cpp" in e for e in f["evidence"])
    # A directory walk keeps treating it as a non-op library.
    walk = cli(capsys, "check", "-f", "json", "--static", str(Path(_path("noreg.so")).parent))
    for r in walk.json()["reports"]:
        if r["target"]["path"].endswith("/noreg.so"):
            assert _codes(r) == []


def test_own_code_undefined_symbol_is_an_incomplete_build(
        real: dict[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    assert real["undef"]["loaded"] is False
    assert "undefined symbol: _ZN6tinyop12helper_scaleEd" in real["undef"]["error"]
    code, rep = _json(capsys, "--static", _path("undef.so"))
    assert code == 1 and rep["diagnosis"]["cause"] == 4
    assert _codes(rep, "error") == ["OD430"]


def test_own_global_function_undefined_is_an_incomplete_build(
        real: dict[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 14's P4: a helper declared at global scope (the tutorials' style — LLTM's
    lltm_cuda_forward declared in the .cpp, defined in the .cu left out of sources=) was OD301,
    cause 3 "version mismatch", while explain said cause 4: no release of anything provides the
    project's own function. It is OD430 now, as a namespaced one is."""
    assert real["undef_global"]["loaded"] is False
    assert "undefined symbol: _Z19helper_scale_globald" in real["undef_global"]["error"]
    code, rep = _json(capsys, "--static", _path("undef_global.so"))
    assert code == 1 and rep["diagnosis"]["cause"] == 4
    assert _codes(rep, "error") == ["OD430"]
    (f,) = [f for f in rep["findings"] if f["code"] == "OD430"]
    assert "helper_scale_global(double)" in f["evidence"][0]
    assert "global scope" in f["evidence"][-1]


def test_a_library_linked_without_torchs_libraries_says_so(
        real: dict[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    """Survey 14's P5: tinyop compiled against this torch's headers and linked without
    -lc10 -ltorch_cpu. torch.ops.load_library fails on a c10/torch symbol that the installed
    torch does export — torch loads its libraries RTLD_LOCAL, and this library NEEDs none of
    them. It was OD304 "built against another torch", with a rebuild that changes nothing; it
    is OD432 (cause 4, the link line), and the real load's OD321 confirms it."""
    assert real["nolink"]["loaded"] is False
    assert "undefined symbol: _ZN" in real["nolink"]["error"], real["nolink"]["error"]
    code, rep = _json(capsys, "--static", _path("nolink/tinyop.so"))
    assert code == 1 and rep["diagnosis"]["cause"] == 4
    assert _codes(rep, "error") == ["OD432"]
    (f,) = [f for f in rep["findings"] if f["code"] == "OD432"]
    assert "libc10.so" in f["message"] and "-lc10 -ltorch_cpu -ltorch" in f["fix"]
    assert any(e.startswith("DT_NEEDED of tinyop.so: ") and "libc10" not in e
               for e in f["evidence"])
    healthy = _json(capsys, "--static", _path("tinyop.so"))[1]  # linked: none of it
    assert "OD432" not in _codes(healthy)


@pytest.mark.probe
def test_a_library_linked_without_torchs_libraries_with_the_probe(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, rep = _json(capsys, _path("nolink/tinyop.so"))
    assert code == 1 and rep["diagnosis"]["cause"] == 4
    od321 = [f for f in rep["findings"] if f["code"] == "OD321"]
    assert od321 and "linked without torch's libraries" in od321[0]["message"]
    assert "OD304" not in _codes(rep)


def test_section_less_libraries_are_read_through_pt_dynamic(
        real: dict[str, dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    assert "libtinydep.so: cannot open shared object file" in \
        real["nosections_missing_dep"]["error"]
    assert real["nosections_uses_dep"]["loaded"]
    assert real["nosections_tinyop"]["call"] == "ok"
    code, rep = _json(capsys, "--static", _path("nosections/missing_dep.so"))
    assert code == 1 and _codes(rep, "error") == ["OD201"]
    code, rep = _json(capsys, "--static", _path("nosections/uses_dep.so"))
    assert code == 0
    assert [k["name"] for k in rep["sections"]["dependencies"]["tree"]["needed"]][:1] == \
        ["libtinydep.so"]
    code, rep = _json(capsys, "--static", _path("nosections/tinyop.so"))
    assert code == 0 and _codes(rep) == []
    assert len(rep["sections"]["dependencies"]["tree"]["needed"]) == 5
    causes = {c["cause"]: c["state"] for c in rep["causes"]}
    assert causes[1] == "not_checked"  # nothing readable: no ✓ claimed


def test_linker_script_fix_names_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    script = SYSLIB / "libc.so"
    if not script.exists() or script.read_bytes()[:4] == b"\x7fELF":
        pytest.skip("no libc.so linker script here")
    _code, rep = _json(capsys, "--static", str(script))
    f = rep["findings"][0]
    assert f["code"] == "OD405" and "git lfs" not in f["fix"]
    assert "libc.so.6" in f["fix"]


@pytest.mark.parametrize("args", [("--timeout", "-5"), ("--probe-memory", "0"),
                                  ("--timeout", "0"), ("--timeout", "inf"), ("--timeout", "nan"),
                                  ("--timeout", "1e400"), ("--probe-memory", "99999999999999")])
def test_non_positive_or_unbounded_limits_are_usage_errors(args: tuple[str, str]) -> None:
    """Each of these was an internal error (OverflowError in the probe's wait) or accepted."""
    res = cli_proc("check", *args, _path("tinyop.so"))
    assert res.code == 3, res.err
    assert "Traceback" not in res.err and "internal error" not in res.err


@pytest.mark.parametrize("line", ["timeout = -5", "probe-memory = 0", "timeout = inf",
                                  "timeout = nan"])
def test_non_positive_limits_in_config_are_usage_errors(tmp_path: Path, line: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n[tool.opdoctor]\n{line}\n')
    res = cli_proc("check", _path("tinyop.so"), cwd=tmp_path)
    assert res.code == 3, res.err


# ------------------------------------------------------------------ with the probe
@pytest.mark.probe
def test_exit_in_initialiser_is_a_finding(real: dict[str, dict[str, Any]],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert real["exit"]["status"] == 3  # a real load ends the host process
    code, rep = _json(capsys, _path("exit.so"))
    assert code == 1 and _codes(rep, "error") == ["OD131"]
    assert rep["sections"]["probe"]["outcome"] == "exited"
    assert "status 3" in next(f for f in rep["findings"] if f["code"] == "OD131")["message"]


@pytest.mark.probe
def test_daemon_does_not_stall_the_probe_and_is_killed(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    lib = _path("daemon.so")
    start = time.monotonic()
    code, rep = _json(capsys, lib)
    took = time.monotonic() - start
    assert code == 0 and _codes(rep) == [] and took < 45, (took, rep["findings"])
    assert rep["sections"]["probe"]["outcome"] == "loaded"
    time.sleep(0.2)
    holders = []
    for maps in glob.glob("/proc/[0-9]*/maps"):
        try:
            if lib in Path(maps).read_text():
                holders.append(maps)
        except OSError:
            continue
    assert holders == []  # the daemon the initialiser forked is gone


@pytest.mark.probe
def test_probe_stopped_before_the_load_is_inconclusive() -> None:
    # A command of its own (this module's in-process probes fork from a zygote that
    # imported torch already): the fresh probe's 0.3 s run out in its import of torch.
    res = cli_proc("check", "--timeout", "0.3", _path("tinyop.so"))
    assert res.code == 0, res.out
    assert res.out.splitlines()[1].startswith("No error — 1 warning(s): probe inconclusive")
    assert "OD125" not in res.out and "✗ Cause" not in res.out


@pytest.mark.probe
def test_stripped_and_probe_agree(capsys: pytest.CaptureFixture[str]) -> None:
    code, rep = _json(capsys, _path("stripped.so"))
    assert code == 0 and _codes(rep, "error") == [], rep["findings"]
    assert rep["sections"]["probe"]["new_ops"] == ["tinyop::scale_add"]


@pytest.mark.probe
def test_package_that_never_loads_its_extension(real: dict[str, dict[str, Any]],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert real["pkg_ok"]["call"] == "ok"
    assert real["pkg_noimport"]["ops"] == []
    assert "No such operator tinyop::scale_add" in real["pkg_noimport"]["call"] or \
        "scale_add" in real["pkg_noimport"]["call"]
    ext = glob.glob(str(Path(_path("pkg_noimport/tinyop/__init__.py")).parent / "_C*.so"))[0]
    code, rep = _json(capsys, ext)
    assert code == 1 and rep["diagnosis"]["cause"] == 5
    assert rep["diagnosis"]["root_findings"] == ["OD505"]
    pkg_root = Path(ext).parent.parent
    res = cli_proc("check", "-f", "json", "--package", "tinyop", cwd=pkg_root)
    assert res.code == 1, res.out
    assert "OD505" in [f["code"] for f in res.json()["reports"][0]["findings"]]


@pytest.mark.probe
def test_undefined_own_symbol_with_probe(capsys: pytest.CaptureFixture[str]) -> None:
    code, rep = _json(capsys, _path("undef.so"))
    assert code == 1 and rep["diagnosis"]["cause"] == 4
    assert rep["diagnosis"]["root_findings"] == ["OD430"]


@pytest.mark.probe
def test_crash_evidence_names_only_the_targets_own_libraries(
        capsys: pytest.CaptureFixture[str]) -> None:
    """ctypes' own libffi is looked up before the target: it explains nothing about a crash."""
    code, rep = _json(capsys, str(fixture("probe/ctor_abort.so")))
    f = next(f for f in rep["findings"] if f["code"] == "OD124")
    assert code == 1 and not any("libffi" in e for e in f["evidence"]), f["evidence"]


@pytest.mark.probe
def test_import_line_is_marked_when_the_import_raised(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """pyinit: _C exports PyInit_other, so `import myext` raises ImportError: OD416 (cause 4,
    the build) explains OD511."""
    pkg = fixture("python/pyinit/myext/__init__.py").parent
    res = cli_proc("check", "--package", "myext", cwd=pkg.parent)
    assert res.code == 1
    line = next(x for x in res.out.splitlines() if x.startswith("import chain:"))
    assert line.startswith("import chain: ✗ import myext"), line
    assert "✗ Cause 4" in res.out and res.out.count("✗ Cause") == 1, res.out
