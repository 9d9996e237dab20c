# reachd — two commands on a fresh Debian machine with the Swift 6 toolchain on PATH:
#   make run    installs missing packages, builds, starts reachd in the foreground
#   make test   installs missing packages, builds, runs every test (integration tests need root)

SWIFT     ?= swift
PREFIX    ?= /usr/local
ARGS      ?=
# Build and test dependencies from Debian.
DEB_PACKAGES := pkg-config libnl-3-dev libnl-route-3-dev iproute2 procps

.PHONY: deps build run test bench clean

deps:
	@command -v $(SWIFT) >/dev/null || { echo "make: the Swift 6 toolchain is not on PATH (https://www.swift.org/install/linux/)" >&2; exit 2; }
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "make: missing packages: $$missing (run as root, or apt-get install them)" >&2; exit 2; fi; \
	  echo "installing: $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build -c release

run: build
	$$($(SWIFT) build -c release --show-bin-path)/reachd $(ARGS)

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --disable-swift-testing

bench: deps
	bench/run $(ARGS)

clean:
	rm -rf .build
