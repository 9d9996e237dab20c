# reachd — two commands on a fresh Debian machine with the Swift 6 toolchain on PATH:
#   make run    installs missing packages, builds, starts reachd (foreground) and reachd-transfers
#   make test   installs missing packages, builds, runs every test (integration tests need root)

SWIFT         ?= swift
CONFIGURATION ?= release
# Extra `swift build` flags (make deb adds --static-swift-stdlib).
SWIFT_BUILD_FLAGS ?=
# The package's version, from its one source: ReachdModel's PackageVersion (what --version prints).
VERSION       := $(shell sed -n 's/^ *public static let current = "\([^"]*\)"$$/\1/p' Sources/ReachdModel/PackageVersion.swift)
$(if $(VERSION),,$(error no version in Sources/ReachdModel/PackageVersion.swift))
PREFIX        ?= /usr/local
BINDIR        ?= $(PREFIX)/bin
UNITDIR       ?= $(PREFIX)/lib/systemd/system
# User units (systemd --user): each user's own reachd-transfers.
USERUNITDIR   ?= $(PREFIX)/lib/systemd/user
SYSCONFDIR    ?= /etc
DBUSDIR       ?= /usr/share/dbus-1
# Session-bus activation files: the session bus reads $XDG_DATA_DIRS/dbus-1/services (/usr/local/share, /usr/share).
DBUSSESSIONDIR ?= $(PREFIX)/share/dbus-1/services
SYSUSERSDIR   ?= /usr/lib/sysusers.d
# Shell completions where each shell looks: bash-completion and fish search $XDG_DATA_DIRS (/usr/local/share,
# /usr/share); zsh's fpath has /usr/local/share/zsh/site-functions, and Debian's packages use vendor-completions.
BASHCOMPDIR   ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR    ?= $(if $(filter /usr,$(PREFIX)),/usr/share/zsh/vendor-completions,$(PREFIX)/share/zsh/site-functions)
FISHCOMPDIR   ?= $(PREFIX)/share/fish/vendor_completions.d
MANDIR        ?= $(PREFIX)/share/man
DESTDIR       ?=
# GIO's module directory (where every GLib app looks for its network monitor), from gio-2.0.pc.
GIOMODULEDIR  ?= $(shell pkg-config --variable=giomoduledir gio-2.0)
ARGS          ?=
TRANSFERS_ARGS ?=
# Build and test dependencies from Debian (libsqlite3-dev for the job store, systemd for systemd-analyze and
# busctl, dbus-daemon/dbus-bin for the private test bus, python3 and nginx-light for test servers, openssl
# for the test CA, curl for the transfer benchmark, network-manager and dnsmasq-base for the real
# NetworkManager and its DHCP server in the metered-source tests, prometheus to scrape the metrics endpoints).
# libglib2.0-dev for the GIO module, python3-gi and gir1.2-glib-2.0 for its tests' GLib program; bash-completion,
# zsh and fish to run the completion scripts in their shells; python3-pyqt6 for the Qt 6 program
# (QNetworkInformation's networkmanager backend) read against reachd's NetworkManager face; python3-dbusmock (UPower and
# power-profiles-daemon mocks for the power constraints); python3-pip and python3-dbus for python-dbusmock (below);
# tzdata for the zones the time tests switch between; python3-fuse for the file system that stops answering; tinyproxy,
# squid and microsocks, the real proxies the transfers go through (their own services are stopped and disabled when
# `make deps` installs them: the tests run their own, in namespaces); xdg-desktop-portal and glib-networking, the
# desktop's proxy settings (GNOME's resolver) that a user's instance asks for.
DEB_PACKAGES := pkg-config libnl-3-dev libnl-route-3-dev libsystemd-dev libsqlite3-dev systemd iproute2 procps \
                python3 nginx-light openssl dbus-daemon dbus-bin curl network-manager dnsmasq-base prometheus \
                gcc libc6-dev libglib2.0-dev python3-gi gir1.2-glib-2.0 bash-completion zsh fish python3-pyqt6 \
                python3-pip python3-dbus python3-dbusmock tzdata python3-fuse tinyproxy squid microsocks \
                xdg-desktop-portal glib-networking
# From PyPI for the tests, beside (not over) Debian's Python packages: python-dbusmock 0.38, the first with the
# modemmanager template (Debian 12's python3-dbusmock is 0.28), into .build/test-python, which the ModemManager
# tests put on PYTHONPATH; --no-deps, so that Debian's python3-dbus and python3-gi serve it.
TEST_PYTHON     := .build/test-python
DBUSMOCK_VERSION := 0.38.*
# make deb: dpkg-dev (dpkg-shlibdeps), lintian. make systemtest: debootstrap and systemd-nspawn for a booted
# Debian with systemd as PID 1 (and dnsmasq-base and openssl from above for systemtest/networkd).
PACKAGING_PACKAGES := dpkg-dev lintian binutils xz-utils
SYSTEMTEST_PACKAGES := debootstrap systemd-container

.PHONY: version deps build gio-module path-monitor-usage run test bench fuzz install deb systemtest clean

# The GIO network-monitor module (gio/, docs/gio.md): plain C against GIO, so that GLib apps that load it
# get no Swift runtime; only the g_io_module_* entry points are exported.
GIO_MODULE  := .build/gio/libgioreachd.so
GIO_CFLAGS  := -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Werror -fstack-protector-strong -D_FORTIFY_SOURCE=2
GIO_LDFLAGS := -shared -Wl,-z,relro,-z,now -Wl,--no-undefined

# Prints the package's version (the tests check it against --version).
version:
	@echo $(VERSION)

deps:
	@command -v $(SWIFT) >/dev/null || { echo "make: the Swift 6 toolchain is not on PATH (https://www.swift.org/install/linux/)" >&2; exit 2; }
	@missing=$$(for p in $(DEB_PACKAGES) $(EXTRA_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "make: missing packages: $$missing (run as root, or apt-get install them)" >&2; exit 2; fi; \
	  echo "installing: $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  for service in tinyproxy squid; do \
	    if echo "$$missing" | grep -qx $$service; then systemctl disable --now $$service >/dev/null 2>&1 || true; fi; \
	  done; \
	fi
	@test -e $(TEST_PYTHON)/dbusmock/templates/modemmanager.py || \
	  /usr/bin/python3 -m pip install -q --no-deps --disable-pip-version-check --root-user-action=ignore --target $(TEST_PYTHON) 'python-dbusmock==$(DBUSMOCK_VERSION)'

build: deps gio-module
	$(SWIFT) build -c $(CONFIGURATION) $(SWIFT_BUILD_FLAGS)

gio-module: $(GIO_MODULE)

$(GIO_MODULE): $(wildcard gio/*.c gio/*.h) | deps
	@mkdir -p $(dir $@)
	$(CC) $(GIO_CFLAGS) $(GIO_LDFLAGS) -o $@ gio/*.c $$(pkg-config --cflags --libs gio-2.0)

# reachd in the foreground, reachd-transfers (downloads) beside it for as long as reachd runs, with per-host
# verdicts from that reachd (its jobs wait until reachd answers). reachd-transfers never runs as root: as root,
# this starts the system instance as the reachd-transfers system user (created by systemd-sysusers, as the
# package does) on /run/reachd/transfers.sock, opened for it by systemd-socket-activate (mode 0644: root's
# alone, where the installed reachd-transfers.socket is 0666 for the group's members too); as another user,
# that user's own instance.
run: build
	bin=$$($(SWIFT) build -c $(CONFIGURATION) --show-bin-path) && \
	if [ "$$(id -u)" = 0 ]; then \
	  systemd-sysusers $(CURDIR)/systemd/reachd.sysusers && \
	  install -d -o reachd-transfers -g reachd-transfers -m 0700 /var/lib/reachd-transfers && \
	  install -d -o reachd-transfers -g reachd-transfers -m 0711 /var/cache/reachd-transfers && \
	  install -d -m 0755 /run/reachd && \
	  transfers="systemd-socket-activate -l /run/reachd/transfers.sock setpriv --reuid=reachd-transfers --regid=reachd-transfers --init-groups --inh-caps=-all --bounding-set=-all /bin/sh -c 'umask 022; exec \"\$$0\" \"\$$@\"' $$bin/reachd-transfers --system --verdicts reachd --reachd-socket /run/reachd/reachd.sock"; \
	else transfers="$$bin/reachd-transfers --verdicts reachd"; fi && \
	{ (eval "exec $$transfers $(TRANSFERS_ARGS)") & transfers_pid=$$!; trap 'kill $$transfers_pid 2>/dev/null' EXIT INT TERM; \
	  $$bin/reachd $(ARGS); }

# Examples/PathMonitorUsage: Apple's documented NWPathMonitor usage, a package of its own that depends on this one
# by path and builds unchanged against ReachdNetwork; PathMonitorIntegrationTests runs it. Its build plan is
# dropped first: SwiftPM does not see a source file added to a path dependency until it plans again.
path-monitor-usage: deps
	rm -f Examples/PathMonitorUsage/.build/debug.yaml
	$(SWIFT) build --package-path Examples/PathMonitorUsage

test: deps gio-module path-monitor-usage
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

bench: deps
	bench/run $(ARGS)

# libFuzzer with AddressSanitizer over the parsers of server input, SECONDS per target (Fuzz/run).
SECONDS ?= 60
fuzz: deps
	Fuzz/run $(SECONDS)

# Binaries (reachd, reachd-transfers, reachctl), systemd units (ExecStart pointing at BINDIR): the system units
# and the user units of each user's own reachd-transfers, the sysusers entry, the D-Bus policy, activation files
# (system bus, and the session bus for the user instances) and interface descriptions, the example
# configuration, the GIO module in GIO's module directory (its cache refreshed by gio-querymodules when
# installing into the running system), the manual pages (man/: reachctl(1), reachd(8), reachd-transfers(8),
# reachd.toml(5), and the D-Bus interfaces' org.reachd.Reachability1(5) and org.reachd.Transfers1(5)), and the
# bash, zsh and fish completions the commands generate (bash's without the #! line ArgumentParser writes:
# bash-completion sources the file); DESTDIR-aware.
install: build
	bin=$$($(SWIFT) build -c $(CONFIGURATION) $(SWIFT_BUILD_FLAGS) --show-bin-path) && \
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR) $(DESTDIR)$(SYSCONFDIR)/reachd && \
	install -m 0755 $$bin/reachd $$bin/reachctl $$bin/reachd-transfers $(DESTDIR)$(BINDIR)/
	sed 's|/usr/local/bin|$(BINDIR)|g' systemd/reachd.service > $(DESTDIR)$(UNITDIR)/reachd.service
	sed 's|/usr/local/bin|$(BINDIR)|g' systemd/reachd-transfers.service > $(DESTDIR)$(UNITDIR)/reachd-transfers.service
	install -m 0644 systemd/reachd.socket systemd/reachd-transfers.socket $(DESTDIR)$(UNITDIR)/
	sed 's|/usr/local/bin|$(BINDIR)|g' systemd/user/reachd-transfers.service > $(DESTDIR)$(USERUNITDIR)/reachd-transfers.service
	install -m 0644 systemd/user/reachd-transfers.socket $(DESTDIR)$(USERUNITDIR)/
	install -d $(DESTDIR)$(UNITDIR)/NetworkManager.service.d
	install -m 0644 systemd/NetworkManager.service.d/reachd-networkmanager-face.conf $(DESTDIR)$(UNITDIR)/NetworkManager.service.d/
	install -m 0644 reachd.toml.example $(DESTDIR)$(SYSCONFDIR)/reachd/reachd.toml.example
	install -d $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(DBUSDIR)/system.d $(DESTDIR)$(DBUSDIR)/system-services $(DESTDIR)$(DBUSDIR)/interfaces \
	    $(DESTDIR)$(DBUSSESSIONDIR)
	install -m 0644 systemd/reachd.sysusers $(DESTDIR)$(SYSUSERSDIR)/reachd.conf
	install -m 0644 dbus/org.reachd.Reachability1.conf dbus/org.reachd.Transfers1.conf dbus/reachd-networkmanager-face.conf dbus/reachd-wifi.conf \
	  $(DESTDIR)$(DBUSDIR)/system.d/
	install -m 0644 dbus/org.reachd.Reachability1.service dbus/org.reachd.Transfers1.service $(DESTDIR)$(DBUSDIR)/system-services/
	install -m 0644 dbus/session/org.reachd.Transfers1.service $(DESTDIR)$(DBUSSESSIONDIR)/
	install -m 0644 dbus/org.reachd.Reachability1.xml dbus/org.reachd.Transfers1.xml dbus/org.reachd.NetworkManagerFace1.xml $(DESTDIR)$(DBUSDIR)/interfaces/
	install -d $(DESTDIR)$(GIOMODULEDIR)
	install -m 0644 $(GIO_MODULE) $(DESTDIR)$(GIOMODULEDIR)/
	if [ -z "$(DESTDIR)" ] && command -v gio-querymodules >/dev/null; then gio-querymodules $(GIOMODULEDIR); fi
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 man/reachctl.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 man/reachd.toml.5 man/org.reachd.Reachability1.5 man/org.reachd.Transfers1.5 man/org.reachd.NetworkManagerFace1.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 man/reachd.8 man/reachd-transfers.8 $(DESTDIR)$(MANDIR)/man8/
	bin=$$($(SWIFT) build -c $(CONFIGURATION) $(SWIFT_BUILD_FLAGS) --show-bin-path) && \
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR) && \
	for command in reachd reachctl reachd-transfers; do \
	  $$bin/$$command --generate-completion-script bash > $(DESTDIR)$(BASHCOMPDIR)/$$command && \
	  sed -i '1{/^#!/d;}' $(DESTDIR)$(BASHCOMPDIR)/$$command && \
	  $$bin/$$command --generate-completion-script zsh > $(DESTDIR)$(ZSHCOMPDIR)/_$$command && \
	  $$bin/$$command --generate-completion-script fish > $(DESTDIR)$(FISHCOMPDIR)/$$command.fish && \
	  chmod 0644 $(DESTDIR)$(BASHCOMPDIR)/$$command $(DESTDIR)$(ZSHCOMPDIR)/_$$command $(DESTDIR)$(FISHCOMPDIR)/$$command.fish || exit 1; \
	done

# reachd_$(VERSION)_ARCH.deb in .build-deb/: release binaries (built in .build-deb/swift, beside the tests' debug
# build) with the Swift runtime linked in, so that the package depends only on Debian's libraries, and bound at
# load time (-z now: with the default -z relro, the GOT is read-only, as Debian's hardening wants), installed by
# the install target under /usr, then packaged by packaging/build-deb and checked by lintian.
# The installed daemons' code is laid out by use: every function in a section of its own, the sections an idle
# daemon runs first and together (packaging/hot-functions.sections, from bench/hot-functions.py), so that the
# kernel's 64 KiB fault-around maps fewer blocks of it; and no dynamic symbol table for the static Swift
# runtime, which nothing looks up. bench/memory measures the idle footprint.
DEB_BUILD_FLAGS := --static-swift-stdlib -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
                   -Xlinker -z -Xlinker now -Xlinker --no-export-dynamic \
                   -Xlinker --section-ordering-file=$(CURDIR)/packaging/hot-functions.sections
deb:
	$(MAKE) --no-print-directory deps EXTRA_PACKAGES="$(PACKAGING_PACKAGES)"
	rm -rf .build-deb/root
	$(MAKE) --no-print-directory install CONFIGURATION=release SWIFT_BUILD_FLAGS="$(DEB_BUILD_FLAGS) --scratch-path .build-deb/swift" PREFIX=/usr \
	    UNITDIR=/lib/systemd/system USERUNITDIR=/usr/lib/systemd/user DBUSSESSIONDIR=/usr/share/dbus-1/services \
	    DESTDIR=$(CURDIR)/.build-deb/root
	@! nm .build-deb/swift/release/reachd | grep -q FoundationInternationalization || \
	  { echo "make deb: reachd links Foundation's ICU part (FoundationInternationalization): keep its modules on FoundationEssentials" >&2; exit 1; }
	packaging/build-deb .build-deb/root $(VERSION) .build-deb
	lintian --fail-on error .build-deb/reachd_$(VERSION)_$$(dpkg --print-architecture).deb

# The package as users install it, under real systemd (a booted Debian in systemd-nspawn) and the real
# NetworkManager: systemtest/run (root); then under the real systemd-networkd with dnsmasq as DHCP server
# (metered from the lease on bookworm, a captive portal API on trixie): systemtest/networkd.
systemtest: deb
	$(MAKE) --no-print-directory deps EXTRA_PACKAGES="$(SYSTEMTEST_PACKAGES)"
	systemtest/run .build-deb/reachd_$(VERSION)_$$(dpkg --print-architecture).deb
	systemtest/networkd .build-deb/reachd_$(VERSION)_$$(dpkg --print-architecture).deb

clean:
	rm -rf .build .build-deb .build-fuzz Examples/PathMonitorUsage/.build
