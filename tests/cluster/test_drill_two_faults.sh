#!/usr/bin/env bash
# A slowed node and a slowed link elsewhere at once, under the default plan: both named, and no live
# rank reported lost or timed out.
# One run; bench/testbed_drills.sh repeats it. The drill itself is in drill_lib.sh.
source "$(dirname "$0")/drill_lib.sh"
need_tree_testbed "$DRILL_FABRIC"
drill_two_faults 1
finish
