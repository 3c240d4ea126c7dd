# drover: `make up` brings the dev stack up on this machine, `make test` runs everything.
# Environment: DROVER_HOME (default .drover) holds the dev stack; DROVER_BIN (default bin)
# the built binaries and Go tools; DEVSTACK_FLAGS passes flags to `devstack up`.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export PATH := $(PATH):/usr/local/go/bin

BIN ?= $(or $(DROVER_BIN),$(CURDIR)/bin)
DEVSTACK = go build -o $(BIN)/devstack ./devstack/cmd/devstack && $(BIN)/devstack
DEVSTACK_FLAGS ?=

.PHONY: help deps stack up down clean status test test-unit test-integration docs-test proto proto-check lint build bench bench-cells bench-converge bench-routing bench-images bench-staging

help:
	@echo "make deps               install what is missing: Debian packages (Postgres, NATS, containerd, ...) and Go tools into bin/"
	@echo "make up [CELLS=N]       make deps, build the binaries into bin/, then bring the dev stack up in the background in \$$DROVER_HOME"
	@echo "                        (default .drover): Postgres and the BBS; with N cells (default 1, 0 for none) also containerd,"
	@echo "                        the auctioneer, N reps, the converger, NATS, the stand-in router, the route-emitter, the fileserver,"
	@echo "                        and two private registries (docker-registry) holding the images drover builds (drover/web, drover/layers)."
	@echo "                        Over a running stack, CELLS=N adds or removes cells (a removed cell is evacuated first) and leaves the"
	@echo "                        rest running; DEVSTACK_FLAGS that differ from what runs are refused (make down first)"
	@echo "make up HOSTS=N         the multi-host topology instead: N cell hosts (at most 4), a control, a router and a client"
	@echo "                        host, each a network namespace with its own IP on a private bridge (docs/operations.md)"
	@echo "make down               stop the dev stack: its processes and the Postgres, containerd and NATS of \$$DROVER_HOME"
	@echo "make clean              make down, then delete \$$DROVER_HOME (database, certificates, containerd state, logs)"
	@echo "make status             show Postgres, containerd, NATS and each process of the dev stack: pid, addresses, health"
	@echo "make test               what CI runs: proto-check, lint, unit tests (-race), the integration suite, every fuzz target briefly"
	@echo "make test-unit          unit tests of every module but integration, with the race detector"
	@echo "make test-integration   the integration suite only (drover's real binaries on the private Postgres and containerd)"
	@echo "make docs-test          run the console blocks of README.md, docs/api.md and docs/operations.md on a dev stack of"
	@echo "                        its own (a scratch copy in its own network namespace) and compare their output"
	@echo "make bench              BBS benchmarks (desire, list 100k, claim+start); see docs/benchmarks.md"
	@echo "make bench-cells        auction Place throughput and desire-to-RUNNING latency on real cells"
	@echo "make bench-converge     the planner over 100,000 ActualLRPs, then a full convergence pass (snapshot, plan, apply)"
	@echo "make bench-routing      50,000 routes registered; RUNNING-to-registered latency"
	@echo "make bench-images       desire-to-RUNNING for docker:// images (warm, cold with the pull) against preloaded:, 20 instances of one new image"
	@echo "make bench-staging      staging of node-express and go-web on bookworm, cold (new app) and warm (build cache), warm/cold"
	@echo "make stack              build the bookworm stack's root filesystem (scripts/stack.sh; cached in .drover/cache/stacks)"
	@echo "make build              build every binary into bin/: bbs, droverctl, auctioneer, rep, converger, route-emitter,"
	@echo "                        fileserver, stager, mkrootfs, devstack (the launcher behind make up), standin-router and"
	@echo "                        the lifecycle (bin/lifecycle/builder, launcher; static)"
	@echo "make proto              buf lint, then regenerate proto/gen with buf"
	@echo "make proto-check        fail when buf lint fails, proto/gen is stale, or buf breaking finds a break against the previous commit"
	@echo "make lint               gofmt, go vet and staticcheck on every module, buf lint on the protos"

deps:
	scripts/install-deps.sh

# The bookworm stack's root filesystem (mmdebstrap; cached under .drover/cache/stacks).
stack: deps
	scripts/stack.sh build bookworm

# CELLS=N starts N cells (reps), default 1.
up: deps
	$(DEVSTACK) up $(if $(CELLS),-cells $(CELLS)) $(if $(HOSTS),-hosts $(HOSTS)) $(DEVSTACK_FLAGS)

# When devstack itself cannot be built, fall back to the pid files and postgres.sh.
down:
	@$(DEVSTACK) down || { \
	  echo "devstack down failed: stopping route-emitter, fileserver, router, converger, reps, auctioneer and BBS by their pid files" >&2; \
	  for f in $${DROVER_HOME:-.drover}/route-emitter/route-emitter.pid $${DROVER_HOME:-.drover}/fileserver/fileserver.pid \
	           $${DROVER_HOME:-.drover}/router/standin-router.pid \
	           $${DROVER_HOME:-.drover}/converger/converger.pid $${DROVER_HOME:-.drover}/rep-*/rep.pid $${DROVER_HOME:-.drover}/auctioneer*/auctioneer.pid \
	           $${DROVER_HOME:-.drover}/bbs-*/bbs.pid $${DROVER_HOME:-.drover}/registry/*/docker-registry.pid; do \
	    [ -f "$$f" ] || continue; pid=$$(cat "$$f"); name=$$(basename "$$f" .pid); \
	    grep -qa "$$name" /proc/$$pid/cmdline 2>/dev/null && kill -9 $$pid; rm -f "$$f"; \
	  done; \
	  scripts/nats.sh stop; \
	  scripts/containerd.sh stop; \
	  scripts/postgres.sh stop; }

clean: down
	rm -rf "$${DROVER_HOME:-.drover}"

status:
	@$(DEVSTACK) status

test:
	scripts/test.sh all

test-unit:
	scripts/test.sh unit

test-integration:
	scripts/test.sh integration

# The docs test: TestDocsParse checks every console block's syntax, TestDocs runs them
# (docs/operations.md, "The docs test"). DOCS_TEST_KEEP_GOING=1 reports every drift.
docs-test:
	go test -count=1 -timeout 20m -v -run '^TestDocs' ./integration/docs/

proto:
	@scripts/install-deps.sh --check >/dev/null || scripts/install-deps.sh
	scripts/proto.sh generate

proto-check:
	@scripts/install-deps.sh --check >/dev/null || scripts/install-deps.sh
	scripts/proto.sh check

lint:
	@scripts/install-deps.sh --check >/dev/null || scripts/install-deps.sh
	scripts/lint.sh

build:
	mkdir -p $(BIN)
	go build -o $(BIN)/ ./bbs/cmd/bbs ./ctl/cmd/droverctl ./devstack/cmd/devstack \
	  ./auctioneer/cmd/auctioneer ./rep/cmd/rep ./converger/cmd/converger \
	  ./route-emitter/cmd/route-emitter ./devstack/cmd/standin-router ./fileserver/cmd/fileserver \
	  ./stager/cmd/stager ./executor/cmd/mkrootfs
	mkdir -p $(BIN)/lifecycle
	CGO_ENABLED=0 go build -o $(BIN)/lifecycle/ ./lifecycle/cmd/builder ./lifecycle/cmd/launcher

bench:
	scripts/postgres.sh start >/dev/null
	go run ./integration/bench/cmd/bbsbench

bench-cells:
	scripts/postgres.sh start >/dev/null
	scripts/containerd.sh start >/dev/null
	go test -run '^$$' -bench Place -benchtime 3x ./auctioneer/auction/
	go test -run '^$$' -bench 'DesireToRunning$$' -benchtime 1x -timeout 20m ./integration/bench/
	go test -run '^$$' -bench DesireToRunningHardened -benchtime 1x -timeout 20m ./integration/bench/

bench-converge:
	scripts/postgres.sh start >/dev/null
	go test -run '^$$' -bench 'Plan100k' ./converger/plan/
	go test -run '^$$' -bench ConvergencePass -benchtime 1x -timeout 20m ./integration/bench/

bench-routing:
	scripts/postgres.sh start >/dev/null
	go test -run '^$$' -bench RoutingRegistration -benchtime 1x -timeout 20m ./integration/bench/

bench-images:
	scripts/postgres.sh start >/dev/null
	scripts/containerd.sh start >/dev/null
	go test -run '^$$' -bench Images -benchtime 1x -timeout 30m ./integration/bench/

bench-staging:
	scripts/postgres.sh start >/dev/null
	scripts/containerd.sh start >/dev/null
	scripts/stack.sh build bookworm >/dev/null
	go test -run '^$$' -bench Staging -benchtime 1x -timeout 30m ./integration/bench/
