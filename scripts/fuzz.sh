#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the stream parser's fuzz target for a bounded time.
#   scripts/fuzz.sh BINDIR SECONDS
set -euo pipefail
bindir=$1 secs=$2
work=$bindir/corpus
seed=$bindir/seed
mkdir -p "$work" "$seed"
"$bindir/mkcorpus" "$seed"
cd "$bindir"
# -max_len covers the largest legal VRAM chunk section plus framing.
exec ./stream_fuzz -max_total_time="$secs" -max_len=140000 -timeout=20 \
	-rss_limit_mb=2048 -print_final_stats=1 "$work" "$seed"
