#!/usr/bin/env bash
# Run the test suite on other Python and torch versions than CI's (CI: Python 3.11 with the
# local torch 2.13 CPU wheel). Each combination gets its own virtual environment under
# .matrix/ (kept between runs: a second run reuses it), set up exactly as the README says:
# torch first, then requirements-dev.txt. Results are appended to .matrix/results.md.
#
#   bash tools/test-matrix.sh                          # the default combinations below
#   bash tools/test-matrix.sh 3.12:2.13.0 3.10:2.8.0   # PYTHON:TORCH pairs
#   bash tools/test-matrix.sh 3.13:2.13.0 -- tests/test_exercises.py -n 0   # pytest arguments
#   MATRIX_INSTALL_ONLY=1 bash tools/test-matrix.sh 3.12:2.13.0   # set up only (downloads)
#
# Python X.Y is looked for as pythonX.Y on PATH, then in pyenv. torch from PyPI is the CUDA
# build on Linux x86-64 (2-4 GB per combination with its NVIDIA libraries); it runs on a
# CPU-only machine too. Set MATRIX_TORCH_INDEX to an index URL for CPU builds where you can
# reach one, e.g. https://download.pytorch.org/whl/cpu.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

combos=()
pytest_args=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; pytest_args=("$@"); break; fi
  combos+=("$1"); shift
done
[ ${#combos[@]} -gt 0 ] || combos=(3.10:2.8.0 3.11:2.13.0 3.12:2.13.0 3.13:2.13.0)

find_python() {
  local v=$1
  # (a pyenv shim is on PATH for every version but fails for one not selected: try it)
  if "python$v" -c pass >/dev/null 2>&1; then command -v "python$v"; return; fi
  if command -v pyenv >/dev/null 2>&1; then
    local p
    for p in $(pyenv root)/versions/"$v"*/bin/python"$v"; do
      [ -x "$p" ] && { echo "$p"; return; }
    done
  fi
  return 1
}

mkdir -p .matrix
results=.matrix/results.md
[ -f "$results" ] || printf '| date (UTC) | Python | torch | pytest arguments | result |\n|---|---|---|---|---|\n' > "$results"
status=0
for combo in "${combos[@]}"; do
  py=${combo%%:*}; torch_version=${combo#*:}
  env=".matrix/py$py-torch$torch_version"
  echo "=== Python $py, torch $torch_version ($env)"
  if ! interp=$(find_python "$py"); then
    echo "Python $py not found (install it, e.g. 'pyenv install $py'); skipped"; status=1; continue
  fi
  if [ ! -x "$env/bin/python" ]; then
    "$interp" -m venv "$env"
  fi
  index=()
  [ -n "${MATRIX_TORCH_INDEX:-}" ] && index=(--index-url "$MATRIX_TORCH_INDEX" --extra-index-url https://pypi.org/simple)
  "$env/bin/python" -m pip install -q --upgrade pip
  "$env/bin/python" -m pip install -q "torch==$torch_version" "${index[@]}"
  "$env/bin/python" -m pip install -q -r requirements-dev.txt
  "$env/bin/python" -m course_utils doctor || true
  if [ -n "${MATRIX_INSTALL_ONLY:-}" ]; then continue; fi
  log="$env/pytest.log"
  set +e
  (export PYTHONPATH="$ROOT" OMP_NUM_THREADS=1; "$env/bin/python" -m pytest "${pytest_args[@]}") 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  summary=$(grep -E '^=+ .*(passed|failed|error).* =+$' "$log" | tail -1 | sed 's/^=* //; s/ =*$//')
  actual=$("$env/bin/python" -c 'import sys, torch; print(f"{sys.version.split()[0]} | {torch.__version__}")')
  echo "| $(date -u '+%Y-%m-%d %H:%M') | $actual | ${pytest_args[*]:-(full suite)} | ${summary:-exit $rc} |" >> "$results"
  [ "$rc" = 0 ] || status=1
done
echo; cat "$results"
exit $status
