#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The gpumig demo: a live migration of a GPU-holding workload on simgpu,
# with its report.  It needs the simulated GPU and the QEMU end-to-end
# harness, which have not landed yet.
set -euo pipefail
cat <<MSG
gpumig demo: not yet.

The demo live-migrates a VM that holds a simgpu instance between two QEMU
processes and prints a report.  It needs simgpu (the simulated GPU) and the
migration engine, which are still being built.  What exists today is the
migration stream codec and the test infrastructure: run 'make check'.
MSG
exit 2
