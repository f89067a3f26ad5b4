#!/usr/bin/env bash
# A node slowed 2x only after the first round has ended: the localization after it finds the node.
# One run; bench/testbed_drills.sh repeats it. The drill itself is in drill_lib.sh.
source "$(dirname "$0")/drill_lib.sh"
need_tree_testbed "$DRILL_FABRIC"
drill_late_fault 1
finish
