# gosbx: build, demo, test. CGO_ENABLED=0 gives one static binary.
GO      ?= go
BIN     ?= bin/gosbx
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo devel)
export CGO_ENABLED = 0
# Go 1.26's Green Tea GC off (GOEXPERIMENT=nogreenteagc): its inline mark bits at each
# small span's end cost a launcher ~22 page faults and ~0.1 ms of CPU, and no GC cycle
# runs in a launch (docs/decisions.md "Speed, tenth attempt: the launcher's page
# faults"). Only where the toolchain still knows the opt-out (Go 1.27 is to drop it)
# and the caller set no GOEXPERIMENT of their own.
ifeq ($(origin GOEXPERIMENT),undefined)
GOEXPERIMENT := $(shell GOEXPERIMENT=nogreenteagc $(GO) env GOEXPERIMENT >/dev/null 2>&1 && echo nogreenteagc)
endif
export GOEXPERIMENT

PREFIX  ?= /usr/local
DESTDIR ?=

.PHONY: build install demo test unit integration integration-goinit cases vet fuzz soak bench clean seccomp-profile

build:
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/gosbx

# $(DESTDIR)$(PREFIX)/bin/gosbx, mode 0755: a root caller's sandbox runs as an unprivileged
# host id, which must be able to execute it.
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/gosbx

# contrib/seccomp/gosbx.json: Podman's default seccomp profile plus what gosbx calls
# (seccomp.ContainerNeeds); TestContainerProfileCalls checks it is current.
seccomp-profile: build
	$(BIN) seccomp container-profile --base /usr/share/containers/seccomp.json > contrib/seccomp/gosbx.json

demo: build
	examples/demo.sh $(BIN)

# The test command (README, .ci/run): unit tests of every package, then the end-to-end
# tests of the built binary, as root and as uid 65534, then a short fuzz of the policy
# parser (a count of inputs, not a duration: with -fuzztime in seconds Go 1.26's fuzz
# coordinator can fail at the deadline with "context deadline exceeded", golang/go#75804,
# fixed in 1.27; it did once in CI).
test: vet
	$(GO) test -count=1 -timeout 15m ./...
	# a root caller's raw init fails every step as the Go init does (a fault build)
	$(GO) test -count=1 -tags gosbxfault -run '^TestRawRootFaultSameAsGo$$' ./nsinit/
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=40000x -fuzzminimizetime=500x ./policy/
	# the Go init where the raw init serves by default (a caller other than root's gosbx
	# exec): the same integration suite against a -tags gosbxgoinit build
	$(MAKE) integration-goinit

# Full leak soak: 1,000 sequential launches and 8 callers x 100, CLI and library (make test
# runs a reduced one).
soak:
	GOSBX_SOAK=full $(GO) test -count=1 -v -p 1 -timeout 20m -run '^TestSoak' ./nsinit/ ./integration/

# gosbx against bwrap, side by side (run as root: installs bubblewrap and hyperfine if
# missing). Prints the table, writes bench/results/ (latest.json, latest.md, raw/); see
# BENCHMARKS.md.
bench:
	GO=$(GO) bench/run.sh

# Longer fuzzing of the policy parser.
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=5m -fuzzminimizetime=500x ./policy/

unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /integration)

integration:
	$(GO) test -count=1 -v -timeout 15m ./integration/

# The same end-to-end tests against a build that never takes the raw init (issue 20;
# nsinit's rawlaunch.go), which the default build takes wherever a config allows it
# (uid 65534's launches here): the Go init proved for them too. The binary sits in a
# directory of its own under /var/tmp (the policy will not shadow /var/tmp itself).
integration-goinit:
	d=$$(mktemp -d /var/tmp/gosbx-goinit-XXXXXX) && chmod 755 $$d && \
	CGO_ENABLED=0 $(GO) build -tags gosbxgoinit -o $$d/gosbx ./cmd/gosbx && chmod 755 $$d/gosbx && \
	GOSBX_TEST_BINARY=$$d/gosbx $(GO) test -count=1 -timeout 20m ./integration/; r=$$?; rm -rf $$d; exit $$r

# The handed acceptance cases (../shared/cases), against a fresh build.
cases: build
	GOSBX=$(abspath $(BIN)) ../shared/cases/run

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above are not formatted"; exit 1; }

clean:
	rm -rf bin
