#!/bin/sh
# Runs a GoogleTest executable registered SKIPPABLE (JobctlOptions.cmake) and tells CTest how it
# ended: its own exit code when it failed or when any of its tests ran, and 77 (the test's
# SKIP_RETURN_CODE) only when it succeeded with every test skipped — no GPU, say. A failing test
# is therefore always a failure, whatever else the output says.
#
#   run_skippable_test.sh EXECUTABLE [ARGS...]
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || exit "$rc"
ran=$(sed -n 's/^\[==========\] \([0-9][0-9]*\) tests\{0,1\} from .* ran\..*/\1/p' "$out" | tail -1)
skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9][0-9]*\) tests\{0,1\}, listed below:.*/\1/p' "$out" | tail -1)
if [ -n "$ran" ] && [ "$ran" -gt 0 ] && [ "${skipped:-0}" -eq "$ran" ]; then
  echo "run_skippable_test.sh: all $ran test(s) skipped: reporting the executable as skipped"
  exit 77
fi
exit 0
