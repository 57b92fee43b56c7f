# urouter: a userspace IPv6 router. See README.md.

GO ?= go

.PHONY: test check test-units test-labs test-measured lint build bench lab lab-eth lab-frr image lab-container

# A pure-Go static binary: without cgo a client starts in half the time
# (it is started once per command).
build:
	CGO_ENABLED=0 $(GO) build -o bin/urouter ./cmd/urouter

# The linter, pinned and fetched through the Go module proxy, so a fresh
# machine needs nothing but Go. Zero findings: an error meant to be ignored
# is written `_ = f() // why`, and the two config files say what is off.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
ERRCHECK ?= github.com/kisielk/errcheck@v1.30.0
lint:
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(ERRCHECK) -exclude .errcheck-excludes ./...

# The test command: vet, the linter, then every test with the race detector
# (the integration tests need root and network namespaces). fib6's model
# and real-table tests, control's randomised ones and feed's floods run
# smaller under the race detector, so those packages run once more at
# full size without it. Three jobs run side by side: vet and the linter; the
# packages' own tests; the integration tests that measure nothing (the
# labs, UROUTER_TESTS=labs). The integration tests that measure (a rate,
# a latency or a timer's schedule under load, the daemon's CPU, memory or
# threads) run after, alone: fib6's race-built tests beside the CoPP lab
# took the CPU of one side only (its transit read 0.75 of idle, 0.90
# alone). The labs mostly wait on their daemons and timers: eight run at
# once; their daemons are race-built, the thousands of clients they start
# are make build's (see integration/main_test.go, groups_test.go).
test:
	$(MAKE) -j3 --output-sync=target check test-units test-labs
	$(MAKE) test-measured

check:
	$(GO) vet ./...
	$(MAKE) lint

test-units:
	$(GO) test -race -count=1 -timeout 40m $$($(GO) list ./... | grep -v '/integration$$')
	$(GO) test -count=1 -timeout 10m ./fib6 ./control ./feed

test-labs:
	UROUTER_TESTS=labs $(GO) test -race -count=1 -timeout 40m -parallel 8 ./integration

test-measured:
	UROUTER_TESTS=measured $(GO) test -race -count=1 -timeout 40m ./integration

# The container image, urouter:latest (Containerfile), from make build's
# binary, with podman or docker, whichever is here. podman reads
# container/containers.conf unless CONTAINERS_CONF names another: these
# machines need runc, cgroupfs and no default ulimits (see that file).
ENGINE ?= $(shell command -v podman || command -v docker)
image: build
	rm -rf bin/image
	mkdir -p bin/image/rootfs/usr/bin bin/image/rootfs/etc/urouter bin/image/rootfs/var/lib/urouter \
		bin/image/rootfs/run/urouter bin/image/rootfs/tmp
	cp bin/urouter bin/image/rootfs/usr/bin/urouter
	cp container/urouter.conf bin/image/rootfs/etc/urouter/urouter.conf
	cp Containerfile bin/image/Containerfile
	CONTAINERS_CONF=$${CONTAINERS_CONF:-$(CURDIR)/container/containers.conf} \
		$(ENGINE) build $(if $(findstring podman,$(ENGINE)),--format docker) -t urouter:latest -f bin/image/Containerfile bin/image

# The container demo: the image between two netns hosts, its interfaces
# moved in after it starts, as containerlab does (as root).
lab-container: image
	bash bench/lab-container.sh

# The demo lab: urouter between two netns hosts, real traffic (as root).
lab:
	bash bench/lab.sh tun

# The Ethernet demo lab: urouter on the veths of two hosts it autoconfigures.
lab-eth:
	bash bench/lab.sh eth

# The routing-daemon demo: FRR programs urouter over FPM from a BIRD peer.
lab-frr:
	bash bench/lab-frr.sh

# Micro-benchmarks with their peers, one at a time on the shared machine.
bench:
	flock /tmp/bench.lock $(GO) test -run '^$$' -bench . -benchtime 2s ./fib6
