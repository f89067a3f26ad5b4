#!/usr/bin/env bash
# A link 2x slower (not 100x) between a node of each leaf: that link is the finding, and no node.
# One run; bench/testbed_drills.sh repeats it. The drill itself is in drill_lib.sh.
source "$(dirname "$0")/drill_lib.sh"
need_tree_testbed "$DRILL_FABRIC"
drill_link_2x 1
finish
