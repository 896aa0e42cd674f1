#!/usr/bin/env bash
# compute-sanitizer around one command, for the differential driver:
#   sanitize_wrap.sh TOOL COMMAND...
# Exits 99 when the sanitizer found errors (its report on stderr), else with
# the command's own status. A run that made no CUDA call (a compile error, say)
# is rerun plainly, since the sanitizer then reports its own exit status.
# API errors are not reported: out-of-memory handling is tested on purpose.
tool="$1"; shift
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
log=$(mktemp /tmp/rfsan.XXXXXX)
"$CS" --tool "$tool" --report-api-errors no --error-exitcode 99 --log-file "$log" "$@"
rc=$?
if [ $rc = 99 ] || grep -q "ERROR SUMMARY: [1-9]" "$log"; then
  cat "$log" >&2; rm -f "$log"; exit 99
fi
if ! grep -q "ERROR SUMMARY" "$log"; then
  rm -f "$log"; "$@"; exit $?
fi
rm -f "$log"
exit $rc
