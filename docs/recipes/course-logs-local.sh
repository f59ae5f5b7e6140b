#!/usr/bin/env bash
# The class's progress logs in one shared folder on a JupyterHub with local users (The Littlest
# JupyterHub, LocalProcessSpawner, SystemdSpawner): every learner writes their own log there,
# the instructors read them all; a learner cannot list the folder, read another's log, change,
# remove or rename it. docs/instructor_guide.md, "JupyterHub", step 4.
#
#   sudo bash docs/recipes/course-logs-local.sh /srv/course-logs course-staff INSTRUCTOR...
#
# The folder is root's, in the instructors' group, mode 3773:
#   3 = setgid (every log made in it gets the instructors' group) + sticky (only a file's owner
#       removes or renames it);
#   7 = root; 7 = the instructors list and read it;
#   3 = everyone else (the learners) may create files in it but not list it.
# The course makes a new log in such a folder readable by that group and nobody else (mode 0640,
# whatever the learner's umask; course_utils/progress.py, _open_log) and does not follow a link
# planted under a learner's name. tests/test_course_logs_recipe.py runs this script as root with
# real accounts and checks all of the above.
set -euo pipefail
folder=${1:?usage: $0 FOLDER STAFF_GROUP [INSTRUCTOR...]}
staff=${2:?usage: $0 FOLDER STAFF_GROUP [INSTRUCTOR...]}
shift 2
getent group "$staff" >/dev/null || groupadd --system "$staff"
for instructor in "$@"; do
    usermod -a -G "$staff" "$instructor"   # takes effect at their next login
done
install -d -o root -g "$staff" -m 3773 "$folder"
echo "$folder: $(stat -c '%A %U:%G' "$folder")"
