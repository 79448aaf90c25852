# crewcast — make targets. `make test` is what CI (.ci/run) runs.
GO ?= go

.PHONY: demo test unit fuzz bench bench-instructions chaos build vet lint openapi-lint cluster ha

demo:
	$(GO) run ./cmd/crewcast demo

# Everything CI checks: vet, staticcheck, the OpenAPI linter, the race-enabled test suite,
# short fuzz runs, and the short reliability harness.
test: vet lint openapi-lint unit fuzz chaos

# One non-race compile of every package serves vet, staticcheck and the
# binary the e2e tests, the chaos harness and the operations walkthrough
# (deploy/operations_doc_test.go) run: all compile as docs/operations.md
# installs crewcast (static, -trimpath), so each finds the others' packages
# in the build cache. The race-enabled tests and the fuzzing compile their
# own, as they must.
GOFLAGS_ENV := $(shell $(GO) env GOFLAGS)
STATIC = CGO_ENABLED=0 GOFLAGS="$(strip $(GOFLAGS_ENV) -trimpath)"

# bench/peers is a module of its own (it follows crewcast's go.mod through a
# replace, hence -mod=mod), so ./... does not reach it: vet, lint and test it
# explicitly.
PEERS = cd bench/peers && CGO_ENABLED=0 GOFLAGS="$(strip $(GOFLAGS_ENV) -trimpath -mod=mod)"
PEERS_TEST = cd bench/peers && GOFLAGS="$(strip $(GOFLAGS_ENV) -mod=mod)"

# The binary under test, built once by `make build` (CREWCAST_TEST_BINARY
# for test/e2e, CREWCAST_CHAOS_BIN for test/chaos).
TESTBIN = $(CURDIR)/bin/crewcast

vet:
	$(STATIC) $(GO) vet ./...
	$(PEERS) $(GO) vet ./...

# staticcheck's default checks, pinned (fetched through the module proxy,
# not a requirement of crewcast's go.mod).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(STATIC) $(GO) run $(STATICCHECK) ./...
	$(PEERS) $(GO) run $(STATICCHECK) ./...

# The API document through an outside linter (Redocly, pinned in
# package-lock.json; `npm ci` installs it): strict validators and client
# generators must accept it. Errors fail; warnings are printed.
openapi-lint:
	npx --no-install redocly lint docs/openapi.yaml

unit: build
	CREWCAST_TEST_BINARY=$(TESTBIN) $(GO) test -race -timeout 20m ./...
	$(PEERS_TEST) $(GO) test -race -timeout 10m ./...

# Each fuzz target briefly (FUZZTIME=60s for the long run).
FUZZTIME ?= 10s
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

# Every benchmark, printing RESULT lines: the actor runtime's own, the
# service's (bench/: ingest, end to end, fan-out, 1 M hibernated groups;
# CREWCAST_BENCH_SCALE_N=100000 for a quicker run), and the comparisons
# with protoactor-go and River (bench/peers, its own module, which follows
# crewcast's go.mod through a replace: hence -mod=mod), which need
# PostgreSQL, and the cluster figures (chaos T8, ~2 minutes). About 12
# minutes on 2 cores.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./actor/
	$(GO) run ./bench
	cd bench/peers && CREWCAST_TEST_POSTGRES="$${CREWCAST_TEST_POSTGRES:-postgres://root@127.0.0.1:5432/test?sslmode=disable}" $(GO) run -mod=mod .
	# Several nodes (issue 15): cluster_failover_p99 and cluster_handoff_p99
	# come from the chaos scenario T8 (real processes, SIGSTOP / SIGTERM).
	CREWCAST_CHAOS_CLUSTER_ITERATIONS=10 $(GO) run ./test/chaos -only T8

# Instructions executed per ingested webhook, per fan-out recipient and
# per end-to-end event, counted by valgrind's callgrind (bench/instructions.go):
# fixed inputs, GOMAXPROCS=1, each workload three times (the figure is the
# smallest total; the run fails when the next smallest is more than 5%
# above it; measured repeatability 0.3-4%, docs/performance.md), so the
# figure moves far less with the machine's load than wall-clock figures
# do. Not part of `make test` or `make bench`; about 10 minutes on an idle
# machine.
bench-instructions:
	$(GO) run ./bench -run instructions

# Reliability harness (docs/reliability.md): kill -9, duplicate webhooks,
# corrupt snapshots, disk full, PostgreSQL backend loss, soak. This is the
# short run; CREWCAST_CHAOS_ITERATIONS and CREWCAST_CHAOS_SOAK lengthen it.
chaos: build
	CREWCAST_CHAOS_BIN=$(TESTBIN) $(STATIC) $(GO) run ./test/chaos

build:
	$(STATIC) $(GO) build -o bin/crewcast ./cmd/crewcast

# Three nodes on loopback against the local PostgreSQL, plus the simulator
# (scripts/cluster.sh; docs/deploy.md). Prints the URLs and an admin key.
cluster:
	@./scripts/cluster.sh

# The same three nodes on a highly available PostgreSQL: etcd, two
# PostgreSQL instances under Patroni (run as the postgres user, data in a
# temporary directory), the simulator (scripts/ha.sh; docs/deploy.md).
# CREWCAST_HA_SYNC=off runs asynchronous replication.
ha:
	@./scripts/ha.sh
