"""The forked torch children of tests/torchfork.py behave as `python -c` children do.

The ground-truth tests (the framework itself fails that way) run their torch programs in
children forked from a zygote that imported torch once. Here each observable a test reads is
compared with a real `python -c` child: output, exit status (an exception, ``sys.exit``, a
signal), argv, working directory, environment, stdin — and a library loaded in one child is not
in the next. The same for TensorFlow's interpreter (build/venv-tf), and for programs whose first
act is importing the framework through a package of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import BUILD, fixture, reference
from tests.torchfork import _starts_with_torch, first_framework, run_python, run_torch

TF_PY = BUILD / "venv-tf" / "bin" / "python"

LOAD = "import ctypes, sys, torch\ntry:\n    ctypes.CDLL(sys.argv[1])\n    print('LOADED')\n" \
       "except OSError as e:\n    print(e)\n"


def _plain(code: str, *argv: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=120, **kw)  # type: ignore[call-overload]


@pytest.mark.probe  # starts plain torch interpreters to compare with (slow: ~1.1 s each)
@pytest.mark.parametrize(("code", "argv"), [
    (LOAD, ("loader/other_torch.so",)),  # the real loader's undefined symbol
    (LOAD, ("loader/uses_dep.so",)),  # a dependency not found
    ("import torch\nraise ValueError('boom')\n", ()),  # an uncaught exception: traceback, 1
    ("import torch, sys\nsys.exit('bye')\n", ()),  # a message to stderr, 1
    ("import torch, sys\nprint(sys.argv[1:], sys.path[0] == '')\nsys.exit(3)\n", ("a", "b c")),
    ("import torch, os\nos.abort()\n", ()),  # a signal: -6
])
def test_forked_child_matches_a_python_child(code: str, argv: tuple[str, ...]) -> None:
    args = [str(fixture(a)) if a.endswith(".so") else a for a in argv]
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    forked, plain = run_torch(code, *args, env=env), _plain(code, *args, env=env)
    assert (forked.returncode, forked.stdout, forked.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)


@pytest.mark.probe  # one plain torch interpreter to compare with
def test_merged_streams_keep_the_order_written() -> None:
    """``merge_stderr`` is ``stderr=subprocess.STDOUT``: one stream, in the order written (the
    real-world suite records a case's output so, warnings and traceback interleaved)."""
    code = "import torch, sys\nfor i in range(3):\n    print('out', i, flush=True)\n" \
           "    print('err', i, file=sys.stderr, flush=True)\nraise SystemExit('bye')\n"
    forked = run_torch(code, merge_stderr=True)
    plain = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
    assert (forked.returncode, forked.stdout, forked.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)
    assert forked.stdout.splitlines()[:2] == ["out 0", "err 0"]


@pytest.mark.probe
def test_cwd_environment_and_stdin_reach_the_child(tmp_path: object) -> None:
    code = "import torch, os, sys\nprint(os.getcwd(), os.environ['ODX'], sys.stdin.read())\n"
    env = dict(os.environ, ODX="42")
    got = run_torch(code, env=env, cwd=str(tmp_path), input="from stdin")
    assert got.stdout == f"{tmp_path} 42 from stdin\n"


@pytest.mark.probe
def test_a_library_loaded_in_one_child_is_not_in_the_next() -> None:
    load = "import torch, sys\ntorch.ops.load_library(sys.argv[1])\n" \
           "print(torch._C._dispatch_has_kernel_for_dispatch_key('myop::weighted_sum', 'CPU'))\n"
    assert run_torch(load, str(reference())).stdout == "True\n"
    ask = "import torch\nprint(any(n.startswith('myop::') " \
          "for n in torch._C._dispatch_get_all_op_names()))\n"
    assert run_torch(ask).stdout == "False\n"


@pytest.mark.probe
def test_timeout_and_check_raise_as_subprocess_does() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_torch("import torch, time\ntime.sleep(30)\n", timeout=0.5)
    with pytest.raises(subprocess.CalledProcessError):
        run_torch("import torch, sys\nsys.exit(2)\n", check=True)


def test_only_programs_that_start_with_torch_are_forked() -> None:
    assert _starts_with_torch("import json, torch\n")
    assert _starts_with_torch('"""doc"""\nimport sys\nfrom torch import ops\n')
    assert not _starts_with_torch("import ctypes, sys; ctypes.CDLL(sys.argv[1])")
    assert not _starts_with_torch("import numpy, torch\n")
    assert not _starts_with_torch("import os\nos.environ['X'] = '1'\nimport torch\n")
    with pytest.raises(ValueError, match="does not start with"):
        run_torch("import ctypes\n")
    # run_python runs such a program as a plain child: torch is not loaded there
    out = run_python("import sys\nprint('torch' in sys.modules)\n")
    assert out.stdout == "False\n"


@pytest.mark.probe
def test_a_pythonpath_that_shadows_nothing_shares_the_zygote(tmp_path: object) -> None:
    """A PYTHONPATH entry is added where the interpreter puts it (right after the script's
    directory) in a child of the plain zygote; one that holds a module torch's import loaded
    (here `typing_extensions`) gets a zygote started with it, as a real process would."""
    from pathlib import Path

    from tests import torchfork

    site = Path(str(tmp_path)) / "site"
    site.mkdir()
    (site / "odx_mod.py").write_text("VALUE = 7\n")
    env = dict(os.environ, PYTHONPATH=str(site))
    code = "import torch, sys, odx_mod\nprint(odx_mod.VALUE, sys.path.index(sys.argv[1]))\n"
    before = len(torchfork._zygotes)
    assert run_torch(code, str(site), env=env).stdout == "7 1\n"
    plain = _plain(code, str(site), env=env)
    assert plain.stdout == "7 1\n", plain.stderr
    assert not any(dict(k[2]).get("PYTHONPATH") for k in list(torchfork._zygotes)[before:])
    (site / "typing_extensions.py").write_text("SHADOW = True\n")
    shadow = "import torch, typing_extensions\nprint(hasattr(typing_extensions, 'SHADOW'))\n"
    forked, real = run_torch(shadow, env=env), _plain(shadow, env=env)
    assert (forked.returncode, forked.stdout) == (real.returncode, real.stdout), real.stderr
    assert any(dict(k[2]).get("PYTHONPATH") == str(site) for k in torchfork._zygotes)


def test_a_programs_own_package_that_imports_the_framework_first_counts(tmp_path: object
                                                                        ) -> None:
    """`import mypkg` is forked when mypkg (found in the working directory or PYTHONPATH)
    imports the framework before doing anything else; an action first, a relative import, a
    third-party module or a local module shadowing a standard one keep a plain child."""
    from pathlib import Path

    d = Path(str(tmp_path))

    def pkg(name: str, init: str) -> None:
        (d / name).mkdir()
        (d / name / "__init__.py").write_text(init)

    pkg("tfpkg", '"""doc"""\n__version__ = "1.0"\nimport os\nimport tensorflow as tf\n')
    pkg("outer", "import os\n")
    (d / "outer" / "inner.py").write_text("import torch\n")
    pkg("envfirst", "import os\nos.environ['X'] = '1'\nimport torch\n")
    pkg("relfirst", "from . import _C\nimport torch\n")
    pkg("via", "import tfpkg\n")
    dirs = (str(d),)
    assert first_framework("import tfpkg", dirs) == "tensorflow"
    assert first_framework("import via", dirs) == "tensorflow"  # two packages down
    assert first_framework("import outer.inner", dirs) == "torch"  # __init__ then the module
    assert first_framework("import tfpkg", ()) is None  # not found where the program runs
    assert first_framework("import envfirst", dirs) is None
    assert first_framework("import relfirst", dirs) is None
    assert first_framework("import numpy, torch", dirs) is None
    (d / "json.py").write_text("")
    assert first_framework("import json, torch", dirs) is None  # the local json is imported


@pytest.mark.probe  # starts plain TensorFlow interpreters to compare with (~4 s each)
def test_tensorflow_children_fork_from_a_tensorflow_zygote(tmp_path: object) -> None:
    """A TensorFlow program (directly, or through a package whose first act is importing
    TensorFlow) forked from a zygote of the TensorFlow venv's interpreter prints what a plain
    child prints and fails the same way (the import's own log lines go to the zygote's
    stderr, so the error line is compared, not the whole stream)."""
    from pathlib import Path

    from tests import torchfork

    if not TF_PY.exists():
        pytest.skip(f"{TF_PY} missing: run `make venv-tf`")
    d = Path(str(tmp_path))
    (d / "tfuser").mkdir()
    (d / "tfuser" / "__init__.py").write_text(
        "import sys\nimport tensorflow as tf\nprint(tf.__version__, sys.argv[1:])\n"
        "tf.load_op_library(sys.argv[1])\n")
    lib = str(fixture("tensorflow/zero_out_abi0.so"))  # an old-ABI build: undefined symbol
    code = "import tfuser"
    forked = run_python(code, lib, python=str(TF_PY), cwd=d, timeout=300)
    # forked: a zygote of that interpreter and framework serves it (this test's, or one an
    # earlier test of the worker started)
    assert any(k[:2] == (str(TF_PY), "tensorflow") and z.proc.poll() is None
               for k, z in torchfork._zygotes.items())
    plain = subprocess.run([str(TF_PY), "-c", code, lib], cwd=d, capture_output=True,
                           text=True, timeout=300)
    assert (forked.returncode, forked.stdout) == (plain.returncode, plain.stdout)
    assert plain.returncode == 1 and "undefined symbol" in plain.stderr
    assert forked.stderr.strip().splitlines()[-1] == plain.stderr.strip().splitlines()[-1]
