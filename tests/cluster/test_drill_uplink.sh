#!/usr/bin/env bash
# The uplink between the two leaves at half a port: a switch (uplink) finding, no node or link finding.
# One run; bench/testbed_drills.sh repeats it. The drill itself is in drill_lib.sh.
source "$(dirname "$0")/drill_lib.sh"
need_tree_testbed "$DRILL_FABRIC"
drill_uplink 1
finish
