"""The ready-made recipes for grading a class on many machines (docs/recipes/: a Kubernetes
Indexed Job, a Slurm job array) parse, and the `grade` commands they run use the CLI's real
options (parsed here with the very parsers `python -m course_utils grade` uses)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from course_utils.instructor import grade, grade_merge, grade_shard

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "docs" / "recipes"
MARK = "python -m course_utils grade"
SAMPLE = {"JOB_COMPLETION_INDEX": "3", "SHARDS": "8", "SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "8"}


def _expand(text: str) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: SAMPLE.get(m.group(1) or m.group(2), "/somewhere"), text)


def _check_command(command: str) -> str:
    """Parse one `python -m course_utils grade ...` with the CLI's parsers; returns merge/grade."""
    words = shlex.split(_expand(command))
    assert words[:4] == MARK.split(), command
    args = words[4:]
    if args[:1] == ["merge"]:
        ns = grade_merge._parser().parse_args(args[1:])  # an unknown option exits: the test fails
        assert ns.out and ns.sources
        return "merge"
    ns = grade._parser().parse_args(args)
    assert ns.shard and grade_shard.parse(ns.shard) == (3, 8), command
    assert ns.gradebook, "each shard names its own gradebook"
    return "grade"


def _yaml_commands() -> list[tuple[dict, str]]:
    yaml = pytest.importorskip("yaml")
    found = []
    for path in sorted(RECIPES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            assert doc["apiVersion"] == "batch/v1" and doc["kind"] == "Job", path
            for container in doc["spec"]["template"]["spec"]["containers"]:
                for statement in " ".join(container.get("args", [])).split(";"):
                    if MARK in statement:
                        found.append((doc, statement.strip()))
    return found


def test_kubernetes_recipe_is_an_indexed_job_whose_commands_parse():
    found = _yaml_commands()
    kinds = [_check_command(command) for _, command in found]
    assert sorted(kinds) == ["grade", "merge"]
    job = next(doc for doc, command in found if "--shard" in command)
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    env = {e["name"]: e["value"] for e in spec["template"]["spec"]["containers"][0]["env"]}
    assert int(env["SHARDS"]) == spec["completions"], "SHARDS must equal the number of pods"
    command = next(c for _, c in found if "--shard" in c)
    assert '--shard "${JOB_COMPLETION_INDEX}/${SHARDS}"' in command


def _shell_commands(text: str) -> list[str]:
    joined = text.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        if MARK not in line or line.lstrip().startswith("#"):
            continue
        command = line[line.index(MARK):]
        if line[:line.index(MARK)].endswith('--wrap="'):
            command = command[:command.index('"')]
        out.append(command)
    return out


def test_slurm_recipe_is_valid_bash_and_its_commands_parse():
    script = RECIPES / "grade-slurm.sh"
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    proc = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = script.read_text()
    commands = _shell_commands(text)
    assert sorted(_check_command(c) for c in commands) == ["grade", "merge"]
    assert '--shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT"' in text
    assert re.search(r"^#SBATCH --array=0-\d+$", text, re.M), "the array counts from 0, as --shard does"
    assert "--dependency=afterok:" in text  # the merge waits for every shard


def test_the_guide_points_to_the_recipes():
    guide = (ROOT / "docs" / "instructor_guide.md").read_text()
    for path in RECIPES.iterdir():
        assert f"docs/recipes/{path.name}" in guide, path.name


def test_a_wrong_option_in_a_recipe_would_fail_here():
    with pytest.raises(SystemExit):
        _check_command('python -m course_utils grade subs --shards "3/8" --gradebook g.sqlite')
    with pytest.raises(SystemExit):
        _check_command("python -m course_utils grade merge a.sqlite --output class.sqlite")
