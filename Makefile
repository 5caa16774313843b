# SPDX-License-Identifier: MIT
# penny: make, make test, make asan, make tsan, make fuzz, make install,
# make install-strip, make deb, make lab-test
CC ?= cc
ifeq ($(origin CC),default)
CC = cc
endif
PKG_CONFIG ?= pkg-config
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
# Slurm's HealthCheckProgram and Prolog: LIBEXECDIR/penny/penny-slurm-check
LIBEXECDIR ?= $(PREFIX)/libexec
LIBDIR ?= $(PREFIX)/lib
MANDIR ?= $(PREFIX)/share/man
EXAMPLEDIR ?= $(PREFIX)/share/doc/penny/examples
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
PLUGINDIR ?= $(LIBDIR)/penny
# systemd units (penny-check.service/.timer, penny-top.service) and their
# settings file SYSCONFDIR/default/penny (/etc for PREFIX=/usr)
UNITDIR ?= $(LIBDIR)/systemd/system
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
# penny-top.service's user and /var/lib/penny (systemd-sysusers and
# systemd-tmpfiles --create read them at boot; after make install run them)
SYSUSERSDIR ?= $(LIBDIR)/sysusers.d
TMPFILESDIR ?= $(LIBDIR)/tmpfiles.d
# install-strip keeps the debug info of what it strips under DEBUGDIR, at the
# installed file's path (gdb's debug-file-directory is /usr/lib/debug).
DEBUGDIR ?= $(LIBDIR)/debug
STRIP ?= strip
OBJCOPY ?= objcopy

B ?= build
OPT ?= -O2 -g
SAN ?=
PKGS := libibverbs libibumad libibmad hwloc ncursesw libxml-2.0
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

WARN := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter -Wno-format-truncation -Wno-unknown-warning-option
override CFLAGS := $(OPT) $(SAN) $(WARN) -MMD -MP -fPIC -Isrc -Iplugins/include $(PKG_CFLAGS) \
	-DPENNY_PLUGINDIR='"$(PLUGINDIR)"' $(CPPFLAGS) $(CFLAGS)
override LDFLAGS := $(SAN) $(LDFLAGS)
LIBS := $(PKG_LIBS) -lm -lpthread -ldl -lrt

LIB_SRC := $(sort $(wildcard src/*.c src/*/*.c))
CMD_SRC := $(sort $(wildcard cmd/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/t_*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
CMD_OBJ := $(CMD_SRC:%.c=$(B)/%.o)
UNIT_BIN := $(UNIT_SRC:%.c=$(B)/%)
HELPER_SRC := $(sort $(wildcard tests/helpers/*.c))
HELPER_BIN := $(HELPER_SRC:%.c=$(B)/%)
PRELOAD_SRC := $(sort $(wildcard tests/preload/*.c))
PRELOAD_SO := $(PRELOAD_SRC:%.c=$(B)/%.so)
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
REPLAY_BIN := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=$(B)/tests/fuzz/replay_%)

# The default build puts the binary at ./penny; other builds (asan) in $(B).
ifeq ($(B),build)
PENNY_BIN := penny
else
PENNY_BIN := $(B)/penny
endif

.PHONY: all test check unit asan tsan install install-strip install-list installables uninstall clean lab-test \
	bench plugins fuzz deb FORCE
FUZZ_SECONDS ?= 180
FUZZ_CC ?= clang
all: $(PENNY_BIN) $(UNIT_BIN) $(HELPER_BIN) $(PRELOAD_SO) $(REPLAY_BIN) plugins

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(B)/libpenny.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(PENNY_BIN): $(CMD_OBJ) $(B)/libpenny.a
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(B)/libpenny.a $(LIBS)

$(B)/tests/unit/%: tests/unit/%.c $(B)/libpenny.a tests/unit/unit.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libpenny.a $(LIBS)

# The GPU bench driver links only the plugin side of the engine (no verbs,
# hwloc, curses or libxml2), so that tests/bench/gpu-allreduce.sh builds it
# on GPU machines without those development packages.
DRIVER_OBJ := $(addprefix $(B)/src/,gpu/plugin.o gpu/plugin_open.o gpu/gpumem.o base/log.o base/util.o \
	base/units.o)
$(B)/tests/helpers/penny-gpu-driver: tests/helpers/penny-gpu-driver.c $(DRIVER_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(DRIVER_OBJ) -lm -ldl -lpthread

$(B)/tests/helpers/%: tests/helpers/%.c $(B)/libpenny.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libpenny.a $(LIBS)

# Fuzz harnesses: replayed over their corpora by make test (no libFuzzer);
# make fuzz builds them with libFuzzer into build-fuzz/ (tests/fuzz/run.sh).
.SECONDARY: $(B)/tests/fuzz/replay.o
$(B)/tests/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(B)/tests/fuzz/replay.o $(B)/libpenny.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/tests/fuzz/replay.o $(B)/libpenny.a $(LIBS)

$(B)/tests/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(B)/libpenny.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(FUZZ_LINK) $(LDFLAGS) -o $@ $< $(B)/libpenny.a $(LIBS)

fuzz:
	@FUZZ_SECONDS="$(FUZZ_SECONDS)" FUZZ_RUNS="$(FUZZ_RUNS)" FUZZ="$(FUZZ)" \
		FUZZ_CC="$(FUZZ_CC)" bash tests/fuzz/run.sh

# LD_PRELOAD shims for the tests (no sanitizer: they go before its runtime)
$(B)/tests/preload/%.so: tests/preload/%.c
	@mkdir -p $(dir $@)
	$(CC) $(OPT) $(WARN) -fPIC -shared -o $@ $< -ldl

-include plugins/plugins.mk

# make test builds on every CPU (unless -j is given; the GPU kernels for one
# architecture on a fresh tree: TEST_CUDA_ARCHS in plugins/plugins.mk) and runs the test files
# JOBS at a time (tests/run.sh; default: CPUs; JOBS=1 one after another),
# lab VMs LAB_JOBS at a time; TESTS="unit|cli|lab|FILE..." picks some.
NPROC := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
RUN_TESTS = @PENNY=$(abspath $(PENNY_BIN)) BUILD=$(abspath $(B)) $(if $(JOBS),JOBS=$(JOBS)) \
	$(if $(LAB_JOBS),LAB_JOBS=$(LAB_JOBS)) bash tests/run.sh
.PHONY: build-for-test
build-for-test:
	@$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(NPROC)) all $(PL_TEST_ARCHS)

test check: build-for-test
	$(RUN_TESTS) $(TESTS)

unit: build-for-test
	$(RUN_TESTS) unit

lab-test: build-for-test
	$(RUN_TESTS) lab

asan:
	$(MAKE) B=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
		SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" test

tsan:
	$(MAKE) B=build-tsan OPT="-O1 -g" SAN="-fsanitize=thread" TESTS=unit test

bench: all
	bash tests/bench/host-allreduce.sh
	bash tests/bench/host-coll.sh

# The installed binary: the objects of ./penny, but its plugin loader built
# for PLUGINDIR as given now (make install PREFIX=/usr after make) and
# without this build tree's plugin directory, which must not be searched by
# a binary that runs as root elsewhere.  $(INST)/plugindir holds the value
# it was built for and changes only when that does.
INST := $(B)/inst
INST_BIN := $(INST)/penny
$(INST)/plugindir: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(PLUGINDIR)' | cmp -s - $@ || printf '%s\n' '$(PLUGINDIR)' >$@
$(INST)/plugin.o: src/gpu/plugin.c $(INST)/plugindir
	$(CC) $(CFLAGS) -c -o $@ $<
$(INST)/libpenny.a: $(filter-out $(B)/src/gpu/plugin.o,$(LIB_OBJ)) $(INST)/plugin.o
	@rm -f $@
	ar rcs $@ $^
$(INST_BIN): $(CMD_OBJ) $(INST)/libpenny.a
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(INST)/libpenny.a $(LIBS)
-include $(INST)/plugin.d

# What make install installs, and nothing else (no tests, no test plugins).
installables: $(INST_BIN) $(PLUGIN_SO)

# GNU's install leaves the files unstripped (Debian's dh_strip strips them
# into the -dbgsym package); install-strip strips them (STRIP=, OBJCOPY=)
# and keeps their debug info in DEBUGDIR, linked by .gnu_debuglink.
INSTALLED_ELF = $(BINDIR)/penny $(addprefix $(PLUGINDIR)/,$(notdir $(PLUGIN_SO)))

EXAMPLES := $(wildcard etc/check/*.conf) etc/container/Containerfile $(wildcard etc/kubernetes/*.yaml)
SLURM_CHECK := etc/slurm/penny-slurm-check
UNITS := $(patsubst %.in,%,$(wildcard etc/systemd/*.in)) $(wildcard etc/systemd/*.timer)

install: installables
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/penny $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(EXAMPLEDIR)
	install -m 755 $(INST_BIN) $(DESTDIR)$(BINDIR)/penny
	install -m 644 $(EXAMPLES) $(DESTDIR)$(EXAMPLEDIR)/
	$(install_slurm)
	$(install_units)
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/*.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 644 completions/penny.bash $(DESTDIR)$(BASHCOMPDIR)/penny
	install -m 644 completions/_penny $(DESTDIR)$(ZSHCOMPDIR)/_penny
	$(install_plugins)

# Every path make install can install, one a line, with the plugins that
# need nvcc or NVSHMEM whether or not this build has them (penny(1)'s FILES
# is checked against it, and t0008 checks it against a real install).
install-list:
	@printf '%s\n' $(BINDIR)/penny $(LIBEXECDIR)/penny/penny-slurm-check $(addprefix $(EXAMPLEDIR)/,$(notdir $(EXAMPLES))) \
		$(addprefix $(UNITDIR)/,$(notdir $(UNITS))) $(SYSCONFDIR)/default/penny \
		$(SYSUSERSDIR)/penny.conf $(TMPFILESDIR)/penny.conf \
		$(patsubst man/%,$(MANDIR)/man1/%,$(wildcard man/*.1)) \
		$(patsubst man/%,$(MANDIR)/man7/%,$(wildcard man/*.7)) \
		$(BASHCOMPDIR)/penny $(ZSHCOMPDIR)/_penny $(addprefix $(PLUGINDIR)/,$(PLUGIN_ALL))

# The units name the installed binary and settings file (@BINDIR@,
# @SYSCONFDIR@); an existing settings file is the operator's and stays.
define install_units
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/default $(INST)/units
	@set -e; for u in etc/systemd/*.in; do \
		n=$${u##*/}; n=$${n%.in}; \
		sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $$u >$(INST)/units/$$n; \
		echo "install -m 644 $(INST)/units/$$n $(DESTDIR)$(UNITDIR)/$$n  # $$u filled in"; \
		install -m 644 $(INST)/units/$$n $(DESTDIR)$(UNITDIR)/$$n; \
	done
	install -m 644 etc/systemd/*.timer $(DESTDIR)$(UNITDIR)/
	install -d $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR)
	install -m 644 etc/systemd/penny.sysusers $(DESTDIR)$(SYSUSERSDIR)/penny.conf
	install -m 644 etc/systemd/penny.tmpfiles $(DESTDIR)$(TMPFILESDIR)/penny.conf
	test -e $(DESTDIR)$(SYSCONFDIR)/default/penny || \
		install -m 644 etc/default/penny $(DESTDIR)$(SYSCONFDIR)/default/penny
endef

# The Slurm script names the installed binary and settings file.
define install_slurm
	sed -e 's|^PENNY=$${PENNY:-penny}$$|PENNY=$${PENNY:-$(BINDIR)/penny}|' \
		-e 's|/etc/default/penny|$(SYSCONFDIR)/default/penny|g' $(SLURM_CHECK) >$(INST)/penny-slurm-check
	grep -q '^PENNY=$${PENNY:-$(BINDIR)/penny}$$' $(INST)/penny-slurm-check
	install -m 755 $(INST)/penny-slurm-check $(DESTDIR)$(LIBEXECDIR)/penny/penny-slurm-check
endef

install-strip: install
	@set -e; for f in $(INSTALLED_ELF); do \
		d=$(DESTDIR)$(DEBUGDIR)$$f.debug; \
		install -d "$${d%/*}"; \
		echo "strip $(DESTDIR)$$f (debug info: $$d)"; \
		$(OBJCOPY) --only-keep-debug "$(DESTDIR)$$f" "$$d"; chmod 644 "$$d"; \
		$(STRIP) --strip-unneeded --remove-section=.comment "$(DESTDIR)$$f"; \
		$(OBJCOPY) --add-gnu-debuglink="$$d" "$(DESTDIR)$$f"; \
	done

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/penny $(DESTDIR)$(BASHCOMPDIR)/penny $(DESTDIR)$(ZSHCOMPDIR)/_penny
	rm -f $(DESTDIR)$(LIBEXECDIR)/penny/penny-slurm-check $(DESTDIR)$(SYSUSERSDIR)/penny.conf \
		$(DESTDIR)$(TMPFILESDIR)/penny.conf
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man1/%,$(wildcard man/*.1))
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man7/%,$(wildcard man/*.7))
	rm -f $(addprefix $(DESTDIR)$(DEBUGDIR),$(addsuffix .debug,$(INSTALLED_ELF)))
	rm -rf $(DESTDIR)$(PLUGINDIR) $(DESTDIR)$(EXAMPLEDIR)
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,penny-check.service penny-check.timer penny-top.service)
	cmp -s etc/default/penny $(DESTDIR)$(SYSCONFDIR)/default/penny && \
		rm -f $(DESTDIR)$(SYSCONFDIR)/default/penny || true

# Debian packages (debian/): dpkg-buildpackage -us -uc -b in a copy of the
# tree's files (tracked and untracked, not ignored: nothing built) under
# DEBDIR/penny, so the tree itself gets no generated file; the .debs land in
# DEBDIR.  NVCC= builds penny-plugins-gpu without the cuda plugin.
DEBDIR ?= build-deb
DEBJOBS ?= auto
deb:
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || \
		{ echo "make deb: needs dpkg-buildpackage and debhelper (make setup-deb)" >&2; exit 2; }
	@test -n "$(DEBDIR)" && test "$(abspath $(DEBDIR))" != "$(CURDIR)" || \
		{ echo "make deb: DEBDIR='$(DEBDIR)' must name a directory for the packages, not the tree" >&2; exit 2; }
	rm -rf $(DEBDIR)/penny && mkdir -p $(DEBDIR)/penny
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files -z --cached --others --exclude-standard; \
	else \
		find . -path ./.git -prune -o -path './build*' -prune -o -path ./penny -prune -o \
			\( -type f -o -type l \) -printf '%P\0'; \
	fi >$(DEBDIR)/penny.files
	tar --null --ignore-failed-read -T $(DEBDIR)/penny.files -cf $(DEBDIR)/penny.tar
	tar -xf $(DEBDIR)/penny.tar -C $(DEBDIR)/penny && rm -f $(DEBDIR)/penny.files $(DEBDIR)/penny.tar
	cd $(DEBDIR)/penny && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL NVCC="$(NVCC)" \
		dpkg-buildpackage -us -uc -b -J$(DEBJOBS)
	rm -rf $(DEBDIR)/penny
	@ls $(DEBDIR)/*.deb

clean:
	rm -rf build build-asan build-tsan build-clang build-fuzz build-deb penny

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d)

# Fresh Debian machine: install what is missing (apt-get; sudo when not root).
.PHONY: setup setup-test setup-deb run
setup:
	bash tests/install-deps.sh build
setup-test:
	bash tests/install-deps.sh test
setup-deb:
	bash tests/install-deps.sh deb
# The main job: a local 4-rank allreduce sweep over every algorithm; it
# builds what it runs, the binary and the plugins (no tests).
run: $(PENNY_BIN) $(PLUGIN_SO)
	./$(PENNY_BIN) allreduce-test --np 4 -b 8 -e 16M -f 4 --algo all
