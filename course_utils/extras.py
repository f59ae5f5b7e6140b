"""Packages only some lessons need: torchvision, for the image lessons.

torchvision is built against one torch release and one build of it (CPU, or a CUDA version):
torchvision ``0.(M+15)`` goes with torch ``2.M`` (0.28 with 2.13, 0.29 with 2.14; each wheel's
metadata pins its torch, e.g. ``Requires-Dist: torch (==2.13.0)``). Installed from another index
than torch, it imports with ``RuntimeError: operator torchvision::nms does not exist``: PyPI's
Linux wheel links to CUDA libraries a CPU build of torch does not have. So the README installs
the pair together, from one index, and ``requirements.txt`` does not list torchvision (pip would
take PyPI's build and break the pair).

``TORCHVISION_LESSONS`` is the one list of lessons that import it; ``tests/test_extras.py``
checks it against the solutions, ``doctor`` reports the pair, ``conftest.py`` runs those
lessons' tests only where torchvision imports (CI runs them in a second environment), and a
lesson's first cell calls :func:`require_torchvision`.
"""

from __future__ import annotations

import re

TORCHVISION_LESSONS = ("13_images_from_files", "14_transfer_learning", "16_capstone_files")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def torchvision_for(torch_version: str) -> str:
    """The torchvision release series that goes with a torch version: ``"2.13.0+cpu"`` -> ``"0.28"``."""
    major, minor = (int(x) for x in re.findall(r"\d+", torch_version.split("+")[0])[:2])
    if major != 2:
        raise ValueError(f"no known torchvision for torch {torch_version}")
    return f"0.{minor + 15}"


def install_line(torch_version: str, python: str = "python") -> str:
    """The command that installs torch and its torchvision as a pair, from the index this torch came from."""
    base = torch_version.split("+")[0]
    pair = f"torch=={base} torchvision=={torchvision_for(base)}.*"
    local = torch_version.partition("+")[2]
    if local.startswith(("cpu", "cu", "rocm")):  # a build from download.pytorch.org
        return f"{python} -m pip install {pair} --index-url https://download.pytorch.org/whl/{local}"
    return f"{python} -m pip install {pair}"


def torchvision_problem() -> str | None:
    """``None`` when torchvision imports and matches torch; else what is wrong, in one line."""
    import torch

    try:
        import torchvision
    except ModuleNotFoundError:
        return "torchvision is not installed"
    except Exception as exc:  # noqa: BLE001 - a mismatched build raises RuntimeError or OSError
        return f"torchvision does not import beside torch {torch.__version__} ({type(exc).__name__}: {exc})"
    want = torchvision_for(torch.__version__)
    if not torchvision.__version__.startswith(want + "."):
        return f"torchvision {torchvision.__version__} does not go with torch {torch.__version__} (needs {want}.x)"
    return None


def require_torchvision() -> None:
    """For a lesson's first cell: nothing when torchvision is usable; else one line saying how to get it, then stop."""
    problem = torchvision_problem()
    if problem is None:
        return
    import torch

    raise ImportError(f"This lesson needs torchvision: {problem}. Install the pair that goes with your torch, "
                      f"then restart the kernel:  {install_line(torch.__version__)}")
