# Thin wrapper over CMake. `make demo` and `make test` do all the set-up on a fresh Debian 12.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
RANKS ?= 4
DEMO_OUT ?= kiln-runs/demo-$(shell date +%Y%m%d-%H%M%S)
CTEST_ARGS ?=

.PHONY: all deps configure build demo test unit install clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# A burn-in campaign on this host, the embedded default plan, with RANKS worker ranks.
demo: build
	$(BUILD)/bin/kiln run --launcher local --ranks $(RANKS) --out $(DEMO_OUT)

# The whole suite: unit, integration (real mpirun), short fuzz runs (built in $(BUILD)-fuzz with
# clang) and system tests on the SLURM testbed (brought up here when running as root, and taken
# down afterwards).
test: build
	@JOBS=$(JOBS) bash scripts/run-tests.sh $(BUILD) $(CTEST_ARGS)

unit: build
	@cd $(BUILD) && ctest -L unit --output-on-failure

# Lays out PREFIX/bin (kiln, kiln-worker), PREFIX/share/kiln/{jobs,profiles} and PREFIX/share/doc/kiln.
PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
