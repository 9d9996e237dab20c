# reachd — two commands on a fresh Debian machine with the Swift 6 toolchain on PATH:
#   make run    installs missing packages, builds, starts reachd in the foreground
#   make test   installs missing packages, builds, runs every test (integration tests need root)

SWIFT         ?= swift
CONFIGURATION ?= release
PREFIX        ?= /usr/local
BINDIR        ?= $(PREFIX)/bin
UNITDIR       ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR    ?= /etc
DBUSDIR       ?= /usr/share/dbus-1
SYSUSERSDIR   ?= /usr/lib/sysusers.d
DESTDIR       ?=
ARGS          ?=
# Build and test dependencies from Debian (systemd for systemd-analyze, python3 for test servers).
DEB_PACKAGES := pkg-config libnl-3-dev libnl-route-3-dev libsystemd-dev systemd iproute2 procps python3

.PHONY: deps build run test bench install clean

deps:
	@command -v $(SWIFT) >/dev/null || { echo "make: the Swift 6 toolchain is not on PATH (https://www.swift.org/install/linux/)" >&2; exit 2; }
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "make: missing packages: $$missing (run as root, or apt-get install them)" >&2; exit 2; fi; \
	  echo "installing: $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build -c $(CONFIGURATION)

run: build
	$$($(SWIFT) build -c $(CONFIGURATION) --show-bin-path)/reachd $(ARGS)

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --disable-swift-testing

bench: deps
	bench/run $(ARGS)

# Binaries, systemd units (ExecStart pointing at BINDIR), the sysusers entry, the D-Bus policy,
# activation file and interface description, and the example configuration; DESTDIR-aware.
install: build
	bin=$$($(SWIFT) build -c $(CONFIGURATION) --show-bin-path) && \
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/reachd && \
	install -m 0755 $$bin/reachd $$bin/reachctl $(DESTDIR)$(BINDIR)/
	sed 's|/usr/local/bin|$(BINDIR)|g' systemd/reachd.service > $(DESTDIR)$(UNITDIR)/reachd.service
	install -m 0644 systemd/reachd.socket $(DESTDIR)$(UNITDIR)/reachd.socket
	install -m 0644 reachd.toml.example $(DESTDIR)$(SYSCONFDIR)/reachd/reachd.toml.example
	install -d $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(DBUSDIR)/system.d $(DESTDIR)$(DBUSDIR)/system-services $(DESTDIR)$(DBUSDIR)/interfaces
	install -m 0644 systemd/reachd.sysusers $(DESTDIR)$(SYSUSERSDIR)/reachd.conf
	install -m 0644 dbus/org.reachd.Reachability1.conf $(DESTDIR)$(DBUSDIR)/system.d/
	install -m 0644 dbus/org.reachd.Reachability1.service $(DESTDIR)$(DBUSDIR)/system-services/
	install -m 0644 dbus/org.reachd.Reachability1.xml $(DESTDIR)$(DBUSDIR)/interfaces/

clean:
	rm -rf .build
