"""The guide's shared log folder for a JupyterHub with local users, for real: the recipe
(docs/recipes/course-logs-local.sh) run as root with real accounts (two learners in one
learners' group, an instructor), then each learner writes their log with the course's own code
(progress.log_event, in a process that has become that learner) and cannot read, change,
remove or rename the other's, nor list the folder; the instructor's room view reads both.

Needs root (useradd); CI runs as root. The Kubernetes recipe (Z2JH) cannot run here: its
values are checked against the course's own names instead."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from course_utils import progress
from course_utils.instructor import room

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "docs" / "recipes"
GUIDE = ROOT / "docs" / "instructor_guide.md"


def _as_user(name: str, fn: Callable[[], Any], env: dict[str, str] | None = None, umask: int = 0o022) -> Any:
    """``fn()`` in a forked process that has become ``name`` (uid, gid, groups); its JSON
    result, or ``{"error": ...}`` when it raised."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(r)
            pw = pwd.getpwnam(name)
            os.setgroups(os.getgrouplist(name, pw.pw_gid))
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            os.umask(umask)
            os.environ.pop("COURSE_LEARNER", None)
            os.environ.update(env or {})
            out = fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            out, code = {"error": f"{type(exc).__name__}: {exc}"}, 1
        os.write(w, json.dumps(out).encode())
        os._exit(code)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


def _denied(action: Callable[[], Any]) -> bool:
    try:
        action()
    except PermissionError:
        return True
    return False


@pytest.fixture
def accounts() -> Iterator[dict[str, str]]:
    if os.geteuid() != 0:
        pytest.skip("creates accounts: needs root (CI runs as root)")
    tag = secrets.token_hex(3)
    names = {"learners": f"cllrn{tag}", "staff": f"clstaff{tag}", "alice": f"cla{tag}", "bob": f"clb{tag}",
             "teacher": f"clt{tag}"}
    made: list[list[str]] = []
    try:
        subprocess.run(["groupadd", names["learners"]], check=True)
        made.append(["groupdel", names["learners"]])
        for who in ("alice", "bob", "teacher"):
            subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "-g", names["learners"],
                            names[who]], check=True)
            made.append(["userdel", names[who]])
        yield names
    finally:
        for cmd in reversed(made):
            subprocess.run(cmd, check=False, capture_output=True)
        subprocess.run(["groupdel", names["staff"]], check=False, capture_output=True)


def test_local_users_write_their_own_log_and_nobody_elses(accounts):
    base = Path(tempfile.mkdtemp(prefix="course-logs-"))
    try:
        base.chmod(0o755)  # like /srv: anyone may pass through
        folder = base / "course-logs"
        subprocess.run(["bash", str(RECIPES / "course-logs-local.sh"), str(folder), accounts["staff"],
                        accounts["teacher"]], check=True, capture_output=True)
        st = folder.stat()
        assert stat.S_IMODE(st.st_mode) == 0o3773 and st.st_uid == 0
        alice, bob = accounts["alice"], accounts["bob"]
        a_log, b_log = folder / f"{alice}.jsonl", folder / f"{bob}.jsonl"

        def check(exercise: str, status: str) -> Callable[[], bool]:
            def write() -> bool:
                progress.log_event("check", exercise, status=status, mistake=None)
                return True
            return write

        # the hub sets JUPYTERHUB_USER; alice's umask would hide her log from the instructors
        assert _as_user(alice, check("01_tensors.attention", "correct"),
                        {progress.ENV_VAR: str(a_log), "JUPYTERHUB_USER": alice}, umask=0o077) is True
        assert _as_user(bob, check("01_tensors.attention", "incorrect"),
                        {progress.ENV_VAR: str(b_log), "JUPYTERHUB_USER": bob}) is True
        for log, who in ((a_log, alice), (b_log, bob)):
            st = log.stat()
            assert (pwd.getpwuid(st.st_uid).pw_name, stat.S_IMODE(st.st_mode)) == (who, 0o640)
            assert st.st_gid == folder.stat().st_gid  # the instructors' group (setgid folder)
        before = a_log.read_bytes()

        def bob_tries() -> dict[str, bool]:
            return {
                "read alice's log": _denied(lambda: a_log.read_bytes()),
                "append to it": _denied(lambda: open(a_log, "a").close()),
                "remove it": _denied(lambda: a_log.unlink()),
                "rename it": _denied(lambda: a_log.rename(folder / "x.jsonl")),
                "chmod it": _denied(lambda: a_log.chmod(0o666)),
                "list the folder": _denied(lambda: os.listdir(folder)),
            }

        tried = _as_user(bob, bob_tries)
        assert tried == dict.fromkeys(tried, True) and len(tried) == 6, tried
        # bob pointing his own logging at alice's file changes nothing (the write fails, silently)
        assert _as_user(bob, check("01_tensors.attention", "correct"), {progress.ENV_VAR: str(a_log)}) is True
        # a link bob plants under a name alice will log to is not followed into bob's file
        planted = folder / f"{alice}-2.jsonl"
        assert _as_user(bob, lambda: os.symlink(b_log, planted) or True) is True
        bob_before = b_log.read_bytes()
        _as_user(alice, check("01_tensors.attention", "correct"), {progress.ENV_VAR: str(planted)})
        assert b_log.read_bytes() == bob_before and a_log.read_bytes() == before

        def teacher_reads() -> dict[str, Any]:
            summary = room.room_summary([folder])
            return {"learners": summary.learners, "events": summary.events, "unreadable": summary.unreadable}

        seen = _as_user(accounts["teacher"], teacher_reads)
        assert seen == {"learners": [alice, bob], "events": 2, "unreadable": []}, seen
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_kubernetes_recipe_gives_each_learner_their_own_folder_and_the_room_pod_all():
    values = yaml.safe_load((RECIPES / "course-logs-z2jh-values.yml").read_text())
    single = values["singleuser"]
    log = Path(single["extraEnv"][progress.ENV_VAR])
    (volume,) = single["storage"]["extraVolumes"]
    (mount,) = single["storage"]["extraVolumeMounts"]
    claim = volume["persistentVolumeClaim"]["claimName"]
    assert mount["name"] == volume["name"]
    assert log.parent == Path(mount["mountPath"]), "the course writes into the mounted folder"
    assert mount["subPath"] == "{username}", "each learner's pod sees only their own folder"
    (init,) = single["initContainers"]
    assert init["volumeMounts"] == [mount] and "chown 1000:100 " + mount["mountPath"] in init["command"][-1]
    docs = {d["kind"]: d for d in yaml.safe_load_all((RECIPES / "course-logs-z2jh-room.yml").read_text())}
    assert docs["PersistentVolumeClaim"]["metadata"]["name"] == claim
    assert docs["PersistentVolumeClaim"]["spec"]["accessModes"] == ["ReadWriteMany"]
    pod = docs["Pod"]["spec"]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim
    (room_mount,) = pod["containers"][0]["volumeMounts"]
    assert room_mount["readOnly"] is True and "subPath" not in room_mount
    # the room view the recipe and the guide run reads the whole volume
    command = f"python -m course_utils progress summary {room_mount['mountPath']}"
    guide = GUIDE.read_text()
    assert command in (RECIPES / "course-logs-z2jh-room.yml").read_text() and command in guide
    assert "course-logs-z2jh-values.yml" in guide and "course-logs-local.sh" in guide


def test_the_learner_is_named_by_the_hub_when_the_course_is_not_told(monkeypatch):
    monkeypatch.delenv("COURSE_LEARNER", raising=False)
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    assert progress._learner() == "ada"
    monkeypatch.setenv("COURSE_LEARNER", "Ada L.")
    assert progress._learner() == "Ada L."


def test_a_log_in_an_ordinary_folder_keeps_the_learners_umask(tmp_path, monkeypatch):
    """Only a shared (setgid) folder forces mode 0640 on a new log."""
    monkeypatch.setenv(progress.ENV_VAR, str(tmp_path / "own" / "progress.jsonl"))
    old = os.umask(0o022)
    try:
        progress.log_event("hint", "01_tensors.attention", level=1)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "own" / "progress.jsonl").stat().st_mode) == 0o644
