#!/bin/bash
# Grade a class with a Slurm job array: one task per shard (`--shard K/N` with K the task id),
# each task's gradebook copied to a shared folder, then a merge job that runs when every task has
# succeeded. docs/instructor_guide.md, "Grading a big class on many machines".
#
#   bash docs/recipes/grade-slurm.sh        # submits the array and the merge after it
#
# Set CLASS to a folder every node sees (submissions/ inside, results/ is written), and the
# array size (0-7: 8 shards) and resources below to your class and cluster. Each task grades with
# every CPU Slurm gives it (grade's default --workers reads the task's CPU set and memory limit).
#SBATCH --job-name=grade-class
#SBATCH --array=0-7
#SBATCH --cpus-per-task=16
#SBATCH --mem=48G
#SBATCH --time=04:00:00
#SBATCH --output=grade-%A_%a.out
set -euo pipefail

CLASS=${CLASS:-$HOME/class}
RESULTS=$CLASS/results

if [[ -z "${SLURM_ARRAY_TASK_ID:-}" ]]; then
    # run by hand: submit the array, then the merge, which waits for every task to succeed
    mkdir -p "$RESULTS"
    array=$(sbatch --parsable --export=ALL,CLASS="$CLASS" "$0")
    sbatch --dependency=afterok:"${array%%;*}" --job-name=grade-merge --cpus-per-task=1 --mem=4G \
        --output="$RESULTS/merge-%j.out" --chdir="$RESULTS" \
        --wrap="python -m course_utils grade merge shard-*.sqlite --out class.sqlite --csv grades.csv --json grades.json --wide-csv lms.csv"
    echo "submitted array job ${array%%;*} and its merge; results in $RESULTS"
    exit 0
fi

# one array task: shard SLURM_ARRAY_TASK_ID of SLURM_ARRAY_TASK_COUNT (an array 0..N-1)
SCRATCH=${TMPDIR:-/tmp}/grade-$SLURM_ARRAY_JOB_ID-$SLURM_ARRAY_TASK_ID   # SQLite on local disk, not NFS
mkdir -p "$SCRATCH"
python -m course_utils grade "$CLASS/submissions" \
    --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" \
    --gradebook "$SCRATCH/shard-$SLURM_ARRAY_TASK_ID.sqlite" --quiet
cp "$SCRATCH/shard-$SLURM_ARRAY_TASK_ID.sqlite" "$RESULTS/"
