"""``python -m course_utils doctor``: check this environment, with a fix for every problem.

Prints one line per requirement, ``OK``, ``WARN`` (works, but outside what the course was
tested with, or not ready to publish) or ``FAIL`` (and ``INFO`` for facts such as which
devices PyTorch can use), and under every FAIL and WARN the command or step that fixes it. The
exit status is 1 when anything failed, else 0 (warnings included). ``--json`` prints the same
as JSON. It works in a clone (``pip install -e .``) and from a plain ``pip install`` of the
wheel with no clone next to it.

Checked: the Python version, torch (version, build, a real computation), torchvision (does it
import, and go with this torch: only the image lessons need it), the devices torch can use,
JupyterLab, ipywidgets and its JupyterLab extension, jupytext and its JupyterLab extension and
pairing config, the Jupyter kernel (does it run this Python?), the course's
other packages (against ``requirements.txt`` in a clone, else the package's own
dependencies), the course package itself, the repository address badges use
(``course_utils/links.py``), and that the progress log is writable.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata as md
import json
import platform
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from collections.abc import Callable

ROOT = Path(__file__).resolve().parent.parent
# The tested range (README, "Tested versions"; tools/test-matrix.sh). Outside it: a warning.
PYTHON_RANGE = ((3, 10), (3, 13))
TORCH_RANGE = ((2, 8), (2, 15))
TORCH_VERSION = "2.13"  # what the stored outputs were made with; the README installs it
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@dataclass
class Check:
    name: str
    status: str  # "OK", "WARN", "FAIL" or "INFO"
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "FAIL"


def ok(name: str, detail: str) -> Check:
    return Check(name, "OK", detail)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, "FAIL", detail, fix)


def warn(name: str, detail: str, fix: str) -> Check:
    return Check(name, "WARN", detail, fix)


def info(name: str, detail: str) -> Check:
    return Check(name, "INFO", detail)


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _pip(spec: str) -> str:
    return f"{Path(sys.executable).name} -m pip install \"{spec}\""


# ---------------------------------------------------------------------- checks


def check_python(version: tuple[int, ...] | None = None) -> Check:
    v = tuple(version or sys.version_info[:3])
    shown = ".".join(map(str, v))
    lo, hi = PYTHON_RANGE
    if lo <= v[:2] <= hi:
        return ok("Python", f"{shown} ({sys.executable})")
    return warn("Python", f"{shown}; the course is tested with Python {lo[0]}.{lo[1]}–{hi[0]}.{hi[1]}",
                f"If something breaks, use Python {hi[0]}.{hi[1] - 1} (python.org, or "
                f"`conda create -n course python={hi[0]}.{hi[1] - 1}`), make a virtual environment with it, "
                "and run the README's setup command there.")


def check_torch() -> list[Check]:
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - a broken install raises more than ImportError
        return [fail("torch", f"cannot be imported ({type(exc).__name__}: {exc})",
                     f"{Path(sys.executable).name} -m pip install torch=={TORCH_VERSION}.0 --index-url {CPU_INDEX}  "
                     "(CPU build; for a GPU build see the README), then the README's setup command.")]
    out = []
    version = torch.__version__
    lo, hi = TORCH_RANGE
    numbers = tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0])[:2])
    if not lo <= numbers <= hi:
        out.append(warn("torch version", f"{version}; the course is tested with torch {lo[0]}.{lo[1]}–{hi[0]}.{hi[1]} "
                        f"(its stored outputs come from {TORCH_VERSION})",
                        f"If a lesson misbehaves: {Path(sys.executable).name} -m pip install torch=={TORCH_VERSION}.0 "
                        f"--index-url {CPU_INDEX}  (or the CUDA build for your GPU, see README)."))
    else:
        out.append(ok("torch version", version))
    build = []
    if torch.version.cuda:
        build.append(f"CUDA {torch.version.cuda}")
    if getattr(torch.version, "hip", None):
        build.append(f"ROCm {torch.version.hip}")
    if torch.backends.mps.is_built():
        build.append("MPS")
    out.append(info("torch build", (", ".join(build) or "CPU only") + f"; {torch.get_num_threads()} CPU threads"))
    try:
        torch.manual_seed(0)
        a = torch.randn(64, 64, requires_grad=True)
        (a @ a).sum().backward()
        assert a.grad is not None and torch.isfinite(a.grad).all()
        out.append(ok("torch works", "matrix multiply and backward on the CPU"))
    except Exception as exc:  # noqa: BLE001
        out.append(fail("torch works", f"a small computation failed ({type(exc).__name__}: {exc})",
                        "Reinstall torch: `pip uninstall torch` then the README's setup command."))
    return out


def check_torchvision() -> Check:
    from . import extras

    lessons = ", ".join(extras.TORCHVISION_LESSONS)
    try:
        problem = extras.torchvision_problem()
        import torch
    except Exception:  # noqa: BLE001 - torch itself is reported by check_torch
        return info("torchvision", "not checked: torch does not import")
    if problem is None:
        import torchvision
        return ok("torchvision", f"{torchvision.__version__} (lessons {lessons})")
    return warn("torchvision", f"{problem}; lessons {lessons} need it, the others do not",
                f"{extras.install_line(torch.__version__, Path(sys.executable).name)}  "
                "(torch and torchvision as a pair, from one index: README, step 2)")


def check_devices() -> list[Check]:
    try:
        import torch
    except Exception:  # noqa: BLE001 - reported by check_torch
        return []
    out = []
    if torch.cuda.is_available():
        try:
            name = torch.cuda.get_device_name(0)
            x = torch.ones(4, device="cuda")
            float((x * 2).sum())
            out.append(ok("device", f"CUDA: {name} ({torch.cuda.device_count()} GPU(s)); lesson 10 uses it"))
        except Exception as exc:  # noqa: BLE001
            out.append(fail("device", f"CUDA is available but a computation on it failed ({type(exc).__name__}: {exc})",
                            "Update the NVIDIA driver, or install the torch build matching it (pytorch.org, "
                            "'Get started'). Every lesson also runs on the CPU."))
    elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        out.append(ok("device", "Apple GPU (MPS); lesson 10 uses it"))
    else:
        out.append(info("device", "CPU only (no CUDA or MPS GPU found): fine, every lesson runs on a CPU"))
    return out


def _labextension(name: str) -> Path | None:
    try:
        from jupyter_core.paths import jupyter_path
    except ImportError:
        return None
    for base in jupyter_path("labextensions"):
        p = Path(base) / name
        if (p / "package.json").exists():
            return p
    return None


def check_jupyterlab() -> Check:
    v = _version("jupyterlab")
    if v is None:
        return fail("JupyterLab", "not installed", _pip("jupyterlab>=4.2,<5"))
    if not v.startswith("4."):
        return fail("JupyterLab", f"{v}; the course needs JupyterLab 4", _pip("jupyterlab>=4.2,<5"))
    return ok("JupyterLab", v)


def check_widgets() -> Check:
    v = _version("ipywidgets")
    if v is None:
        return fail("ipywidgets", "not installed", _pip("ipywidgets>=8.1,<9"))
    if int(v.split(".")[0]) < 8:
        return fail("ipywidgets", f"{v}; the course needs ipywidgets 8", _pip("ipywidgets>=8.1,<9"))
    ext = _labextension("@jupyter-widgets/jupyterlab-manager")
    if ext is None:
        return fail("ipywidgets", f"{v}, but its JupyterLab extension is missing (widgets would show as text)",
                    f"{_pip('jupyterlab_widgets>=3')} (it ships the extension; no build step), "
                    "then restart JupyterLab.")
    return ok("ipywidgets", f"{v}, JupyterLab extension installed")


def _jupytext_server_extension_enabled() -> bool | None:
    try:
        from jupyter_core.paths import jupyter_config_path
    except ImportError:
        return None
    enabled = None
    for base in jupyter_config_path():
        configs = sorted(Path(base).glob("jupyter_server_config.d/*.json"))
        for f in configs + [Path(base) / "jupyter_server_config.json"]:
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            exts = data.get("ServerApp", {}).get("jpserver_extensions", {})
            for key in ("jupyterlab_jupytext", "jupytext"):
                if key in exts:
                    enabled = bool(exts[key]) if enabled is None else enabled
    return enabled


def check_jupytext() -> Check:
    v = _version("jupytext")
    if v is None:
        return fail("jupytext", "not installed (the .py files will not open as notebooks)", _pip("jupytext>=1.16,<2"))
    major, minor = (int(x) for x in re.findall(r"\d+", v)[:2])
    if (major, minor) < (1, 16):
        return fail("jupytext", f"{v}; the course needs jupytext >= 1.16", _pip("jupytext>=1.16,<2"))
    problems = []
    if _labextension("jupyterlab-jupytext") is None:
        problems.append("its JupyterLab extension is missing")
    if _jupytext_server_extension_enabled() is not True:
        problems.append("its Jupyter server extension is not enabled")
    if (ROOT / "solutions").is_dir() and not (ROOT / "jupytext.toml").exists():  # a clone
        problems.append(f"{ROOT / 'jupytext.toml'} (the pairing config) is missing")
    if problems:
        return fail("jupytext", f"{v}, but " + "; ".join(problems),
                    f"{_pip('jupytext>=1.16,<2')} --force-reinstall --no-deps, then "
                    "`jupyter server extension enable --sys-prefix jupyterlab_jupytext`; "
                    "restore jupytext.toml with git.")
    return ok("jupytext", f"{v}, JupyterLab extension and .py pairing configured")


def check_kernel() -> Check:
    """The ``python3`` kernel JupyterLab starts must be this Python (where torch is)."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    except ImportError:
        return fail("Jupyter kernel", "jupyter_client is not installed", _pip("jupyterlab>=4.2,<5"))
    try:
        spec = KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        return fail("Jupyter kernel", "no `python3` kernel", f"{Path(sys.executable).name} -m pip install ipykernel")
    exe = spec.argv[0] if spec.argv else ""
    if exe in ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"):
        # jupyter_client replaces a bare `python` with the Python that runs JupyterLab
        return ok("Jupyter kernel", "python3 runs the Python that starts JupyterLab "
                  "(use `python -m course_utils lab` from this environment)")
    try:
        same = Path(exe).resolve() == Path(sys.executable).resolve()
    except OSError:
        same = False
    if same:
        return ok("Jupyter kernel", f"python3 runs {exe}")
    return fail("Jupyter kernel", f"the `python3` kernel runs {exe}, not this Python ({sys.executable}): "
                "notebooks would not find torch or course_utils",
                f"{Path(sys.executable).name} -m ipykernel install --user --name python3 "
                "(run it with the Python of your course environment).")


def _requirements(path: Path) -> list[tuple[str, str]]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        m = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", line)
        if m:
            out.append((m.group(1), m.group(2).replace(" ", "")))
    return out


HANDLED = {"torch", "jupyterlab", "ipywidgets", "jupytext"}
TEST_ONLY = {"pytest", "pytest-xdist", "nbval", "playwright"}


def _package_requirements() -> tuple[list[tuple[str, str]], dict[str, str]]:
    """``(requirements, {name: extra})`` from the installed course_utils' metadata (a wheel
    install has no requirements.txt); lesson extras except ``test`` are optional."""
    from packaging.requirements import Requirement

    reqs, optional = [], {}
    for line in md.requires("course_utils") or []:
        req = Requirement(line)
        extra = re.search(r"extra\s*==\s*['\"]([\w-]+)['\"]", str(req.marker or ""))
        if extra and extra.group(1) == "test":
            continue
        reqs.append((req.name, str(req.specifier)))
        if extra:
            optional[req.name] = extra.group(1)
    return reqs, optional


def check_packages(requirements: Path | None = None) -> list[Check]:
    """Every other package of requirements.txt is installed with a matching version."""
    try:
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version
    except ImportError:  # pragma: no cover - pip's vendored packaging is not importable
        SpecifierSet = None  # type: ignore[assignment,misc]
    out = []
    optional: dict[str, str] = {}
    if requirements is None and not (ROOT / "requirements.txt").exists():
        reqs, optional = _package_requirements()
    else:
        reqs = _requirements(requirements or ROOT / "requirements.txt")
    good = []
    for name, spec in reqs:
        if name.lower() in HANDLED or name.lower() in TEST_ONLY:
            continue
        v = _version(name)
        if v is None and name in optional:
            out.append(warn(name, f"not installed (only lessons using the [{optional[name]}] extra need it)",
                            _pip(f"course_utils[{optional[name]}]")))
        elif v is None:
            out.append(fail(name, "not installed", _pip(f"{name}{spec}")))
        elif spec and SpecifierSet is not None and not SpecifierSet(spec).contains(Version(v), prereleases=True):
            out.append(fail(name, f"{v} does not satisfy {spec}", _pip(f"{name}{spec}")))
        else:
            good.append(f"{name} {v}")
    if good:
        out.insert(0, ok("other packages", ", ".join(good)))
    return out


def check_course() -> Check:
    try:
        mod = importlib.import_module("course_utils")
    except ImportError as exc:  # pragma: no cover - we are running from it
        return fail("course package", str(exc),
                    f"{Path(sys.executable).name} -m pip install -e .  (in the course folder)")
    from . import course_files

    version = getattr(mod, "__version__", "?")
    where = Path(mod.__file__).resolve().parent.parent
    if (where / course_files.START).exists():
        return ok("course package", f"course_utils {version} from the clone {where}")
    lessons = course_files.packaged_lessons()
    if not lessons:
        return fail("course package", f"course_utils {version} is installed in {where} without its lessons "
                    "and there is no clone next to it",
                    "Install it from a clone (`pip install -e .` in the course folder) or from the course's wheel.")
    folder = course_files.course_folder()
    where_lessons = (f"lessons in {folder}" if folder else
                     f"`python -m course_utils lab` copies its {len(lessons)} lessons "
                     f"to {course_files.default_workspace()}")
    return ok("course package", f"course_utils {version} installed in {where} (not editable); {where_lessons}")


def check_links() -> Check:
    from . import links

    if links.is_placeholder():
        return warn("course address", f"COURSE_REPO is still the placeholder {links.COURSE_REPO!r}: the Binder and "
                    "Colab badges and the Colab install cell point nowhere",
                    "Maintainers: set COURSE_REPO in course_utils/links.py to the GitHub owner/name, then run "
                    "`python -m course_utils build`. Learners: nothing to do.")
    return ok("course address", links.repo_url())


def check_progress_log(path: Path | None | str = "default") -> Check:
    from . import progress

    target = progress.log_path() if path == "default" else path
    if target is None:
        return info("progress log", "turned off (COURSE_PROGRESS_LOG is set to an empty string)")
    target = Path(target)
    fix = (f"Make {target.parent} writable, or point the log elsewhere: "
           "`export COURSE_PROGRESS_LOG=/a/writable/folder/progress.jsonl` (Windows: `set ...`).")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        existed = target.exists()
        with open(target, "a", encoding="utf-8"):
            pass
        if not existed:
            target.unlink()
        probe = tempfile.NamedTemporaryFile(dir=target.parent, prefix=".doctor-", delete=True)
        probe.close()
    except OSError as exc:
        return fail("progress log", f"{target} is not writable ({exc.strerror or exc})", fix)
    return ok("progress log", f"{target} is writable")


CHECKS: list[Callable[[], Check | list[Check]]] = [
    check_python, check_torch, check_torchvision, check_devices, check_jupyterlab, check_widgets, check_jupytext,
    check_kernel, check_packages, check_course, check_links, check_progress_log,
]


def run_checks(checks: list[Callable[[], Check | list[Check]]] | None = None) -> list[Check]:
    out: list[Check] = []
    for fn in checks or CHECKS:
        try:
            res = fn()
        except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others
            res = fail(fn.__name__.replace("check_", ""), f"the check itself crashed ({type(exc).__name__}: {exc})",
                       "Please report this with the output of `python -m course_utils doctor`.")
        out.extend(res if isinstance(res, list) else [res])
    return out


def report(checks: list[Check]) -> str:
    w = max(len(c.name) for c in checks) if checks else 10
    lines = [f"Environment check ({platform.system()} {platform.machine()}, Python {platform.python_version()})", ""]
    for c in checks:
        lines.append(f"{c.status:<4}  {c.name:<{w}}  {c.detail}")
        if c.fix:
            lines.append(f"{'':<4}  {'':<{w}}  fix: {c.fix}")
    failed = [c for c in checks if c.status == "FAIL"]
    warned = [c for c in checks if c.status == "WARN"]
    lines.append("")
    lines.append(f"{len(failed)} problem{'s' * (len(failed) != 1)} found." if failed
                 else "All good: `python -m course_utils lab` opens the course." + (
                     f" ({len(warned)} warning{'s' * (len(warned) != 1)} above.)" if warned else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils doctor", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print the checks as JSON")
    args = ap.parse_args(argv)
    checks = run_checks()
    if args.json:
        print(json.dumps([asdict(c) for c in checks], indent=1))
    else:
        print(report(checks))
    return 0 if all(c.ok for c in checks) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
