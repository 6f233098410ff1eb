# SPDX-License-Identifier: GPL-2.0
#
# gpumig out-of-tree build.  The kernel-side objects are listed in Kbuild;
# this file only drives kbuild and the project's scripts.
#
#   make [KDIR=/path/to/configured/kernel]   build the modules
#   make check                               every test (see README.md)
#   make check-two-host                      the two-host libvirt lane
#   make demo                                the live-migration demo
#   make demo-linux                          ... with a Linux guest (simgpu-guest)
#   make bench                               the benchmarks (ratios)
#   make bench-vram                          only the VRAM migration one
#   make bench-converge                      only the auto-converge one
#   make bench-postcopy                      only the post-copy one
#   make bench-several                       only the several-devices one

ifeq ($(KERNELRELEASE),)

# The running kernel unless told otherwise (KVER=, or KDIR= for a tree).
KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build

PACKAGE_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)

.PHONY: all modules clean install uninstall check check-two-host static kunit fuzz fuzz-long demo demo-linux bench bench-vram bench-converge bench-postcopy bench-several soak \
	deps dkms-install dkms-remove deb

all: modules

modules:
	@test -d "$(KDIR)" || { echo "gpumig: no kernel build tree at $(KDIR)."; \
		echo "  Install the headers of kernel $(KVER) (Debian: apt install linux-headers-$(KVER)),"; \
		echo "  or pass KVER=<release> or KDIR=/path/to/kernel/build."; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules_install

# Undo `make install` for KVER (the running kernel unless told): the
# modules go from /lib/modules/KVER/updates (kbuild's INSTALL_MOD_DIR for
# out-of-tree modules; extra on older kernels).  Unload them first
# (README.md: stop or migrate the VMs, stop the instances, then
# modprobe -r gpumig-vfio-pci simgpu simgpu-pf gpumig).
# INSTALL_MOD_PATH prefixes both, as kbuild's modules_install does.
GPUMIG_KOS := gpumig simgpu simgpu-pf gpumig-vfio-pci
uninstall:
	@for d in updates extra; do for m in $(GPUMIG_KOS); do \
		for f in $(INSTALL_MOD_PATH)/lib/modules/$(KVER)/$$d/$$m.ko \
			 $(INSTALL_MOD_PATH)/lib/modules/$(KVER)/$$d/$$m.ko.*; do \
			[ -e "$$f" ] || continue; echo "  rm $$f"; rm -f "$$f"; done; done; done
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $(KVER)

clean:
	@if [ -d "$(KDIR)" ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	$(MAKE) -C tools clean

deps:
	scripts/install-deps.sh

# Every test: static checks, builds against every supported kernel, KUnit
# and VM tests in the debug kernel, distro-kernel VM tests, fuzzing.
check:
	scripts/check.sh

# The two hosts with libvirt (testing.rst): its own command, out of make
# check's budget; installs what it needs as make check does.
check-two-host:
	scripts/check.sh --only deps,two-host

static:
	scripts/check.sh --only static

# KUnit alone, in the debug kernel: every suite, or those named
# (make kunit KUNIT_MODULES="gpumig_mig_kunit"); make check runs them too.
kunit:
	KUNIT_MODULES="$(KUNIT_MODULES)" scripts/check.sh --only kunit

fuzz:
	scripts/check.sh --only fuzz

# The long fuzz: 10^7 stream-parser executions and 10^6 of the
# architectural-state validator, on two processes each (FUZZ_RUNS to change).
fuzz-long:
	scripts/install-deps.sh
	$(MAKE) -C tools/fuzz O=$(CURDIR)/build/fuzz-bin all
	scripts/fuzz.sh --runs $(or $(FUZZ_RUNS),10000000) build/fuzz-bin

demo:
	scripts/demo.sh

demo-linux:
	scripts/demo.sh --linux

bench:
	scripts/bench.sh

bench-vram:
	scripts/bench.sh --vram

bench-converge:
	scripts/bench.sh --converge

bench-postcopy:
	scripts/bench.sh --postcopy

bench-several:
	scripts/bench.sh --several

soak:
	scripts/soak.sh

# DKMS for the running kernel, or KVER=.  dkms-remove takes gpumig off
# every kernel.
dkms-install:
	scripts/dkms.sh install $(KVER)

dkms-remove:
	scripts/dkms.sh remove

# The Debian package gpumig-dkms (debian/), built with Debian's dh-dkms
# into build/deb/.
deb:
	scripts/deb.sh

endif
