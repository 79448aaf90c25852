# crewcast — make targets. `make test` is what CI (.ci/run) runs.
GO ?= go

.PHONY: demo test unit fuzz bench chaos build vet

demo:
	$(GO) run ./cmd/crewcast demo

# Everything CI checks: vet, the race-enabled test suite, short fuzz runs.
test: vet unit fuzz

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -timeout 20m ./...

# Each fuzz target briefly (FUZZTIME=60s for the long run).
FUZZTIME ?= 10s
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./actor/

# Reliability harness (docs/reliability.md): kill -9, duplicate webhooks,
# corrupt snapshots, disk full, PostgreSQL backend loss, soak. This is the
# short run; CREWCAST_CHAOS_ITERATIONS and CREWCAST_CHAOS_SOAK lengthen it.
chaos:
	$(GO) run ./test/chaos

build:
	$(GO) build -o bin/crewcast ./cmd/crewcast
