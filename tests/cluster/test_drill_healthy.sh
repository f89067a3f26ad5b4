#!/usr/bin/env bash
# A healthy cluster under a shaped fabric: no finding, exit 0.
# One run; bench/testbed_drills.sh repeats it. The drill itself is in drill_lib.sh.
source "$(dirname "$0")/drill_lib.sh"
need_tree_testbed "$DRILL_FABRIC"
drill_healthy 1
finish
