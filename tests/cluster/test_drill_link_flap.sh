#!/usr/bin/env bash
# A link shaped on and off every 1-3 s while the campaign runs: that link is named (slow,
# intermittent or unresolved), and no node.
# One run; bench/testbed_drills.sh repeats it. The drill itself is in drill_lib.sh.
source "$(dirname "$0")/drill_lib.sh"
need_tree_testbed "$DRILL_FABRIC"
drill_link_flap 1
finish
