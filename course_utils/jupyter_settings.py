"""JupyterLab defaults for an image or a shared install of the course (Binder, JupyterHub).

``python -m course_utils.jupyter_settings`` writes ``overrides.json`` into the JupyterLab
settings folder of the environment it runs in (``sys.prefix/share/jupyter/lab/settings``, or
``$JUPYTERLAB_DIR/settings`` when that is set): ``.py`` lesson files open as notebooks, the
notebook's kernel starts without a kernel-choice dialog, and no news is fetched from the
internet (nor is the learner asked about it: the "Jupyter news" pop-up would cover every
notebook) and no update check is made. Learners' own settings still win. ``python -m
course_utils lab`` writes the news part (:data:`NO_NEWS`) before it starts JupyterLab.
binder/postBuild and the JupyterHub recipe (docs/instructor_guide.md) run it. Run from a
virtual environment, it writes into that environment, never into the system Python's JupyterLab
(``jupyterlab.commands.get_app_dir`` falls back to the system's folder when the venv's does not
exist yet, e.g. a venv made with ``--system-site-packages``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# JupyterLab's schema (jupyterlab/schemas/@jupyterlab/apputils-extension/notification.json):
# fetchNews is a string, "none" (the default: ask, with a pop-up) / "true" / "false";
# checkForUpdates a boolean (default true). tests/test_binder.py holds these to the schema.
NO_NEWS = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}
OVERRIDES = {
    "@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook"}},
    "@jupyterlab/notebook-extension:tracker": {"autoStartDefaultKernel": True},
    **NO_NEWS,
}


def settings_dir() -> Path:
    """This environment's JupyterLab settings folder (never another Python's)."""
    app_dir = os.environ.get("JUPYTERLAB_DIR")  # JupyterLab's own override, read by its server too
    if app_dir:
        return Path(app_dir) / "settings"
    return Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"


def write_overrides(folder: Path | None = None, overrides: dict | None = None) -> Path:
    path = Path(folder or settings_dir()) / "overrides.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = json.loads(path.read_text()) if path.exists() else {}
    for plugin, values in (OVERRIDES if overrides is None else overrides).items():
        current = settings.setdefault(plugin, {})
        for key, value in values.items():
            if isinstance(value, dict):
                current.setdefault(key, {}).update(value)
            else:
                current[key] = value
    path.write_text(json.dumps(settings, indent=2) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    print(f"wrote {write_overrides(Path(args[0]) if args else None)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
