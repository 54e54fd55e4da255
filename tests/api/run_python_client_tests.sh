#!/bin/sh
# The Python client (python/) installed as its README says — a venv over Debian's packages,
# `pip install --no-build-isolation ./python`, offline — then its pytest suite against a real
# jobctld and worker (python/tests/conftest.py), recording every JSON exchange; then the recorded
# bodies checked against docs/openapi.json's schemas (validate_openapi.mjs).
#
#   run_python_client_tests.sh SOURCE_DIR WORK_DIR NODE
# Environment: JOBCTLD, JOBCTL_WORKER, JOBCTL_TRAIN (the programs the suite starts).
set -eu
source_dir=$1
work=$2
node=$3
rm -rf "$work"
mkdir -p "$work"
# Debian's interpreter: python3-pytest, python3-setuptools and python3-pip are installed for it.
# The venv gets no pip of its own (copying one in takes seconds): Debian's pip, seen through
# --system-site-packages, installs into the venv all the same.
/usr/bin/python3 -m venv --without-pip --system-site-packages "$work/venv"
# A copy, so that the build leaves nothing (build/, *.egg-info) in the source tree.
cp -r "$source_dir/python" "$work/python"
"$work/venv/bin/python" -m pip install --quiet --no-index --no-build-isolation --no-deps "$work/python"
cd "$work"
# Run from outside the copy: the installed package is imported, not the folder.
JOBCTL_API_RECORD="$work/exchanges.jsonl" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$work/python/tests"
"$node" "$source_dir/tests/api/validate_openapi.mjs" --document "$source_dir/docs/openapi.json" \
  --modules "$source_dir/web/node_modules" --bodies "$work/exchanges.jsonl"
