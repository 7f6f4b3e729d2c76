#!/usr/bin/env bash
# Kept for old notes: fuzz/run.sh config does the work (see its usage).
exec "$(dirname -- "${BASH_SOURCE[0]}")/run.sh" config "$@"
