// SPDX-License-Identifier: GPL-2.0
/*
 * Write the stream fuzzer's seed corpus: valid streams produced by the
 * real encoder, each prefixed with the two split-seed bytes.
 * Usage: mkcorpus DIR
 */
#include <kshim.h>

#include "fuzz_common.h"

static u8 out[4 * FZ_CHUNK];

static void put(const char *dir, const char *name, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(out, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

#define EMIT(call) do {						\
	ssize_t n_ = (call);					\
	if (n_ < 0) {						\
		fprintf(stderr, "encode failed: %zd\n", n_);	\
		exit(1);					\
	}							\
	len += n_;						\
} while (0)

int main(int argc, char **argv)
{
	static u8 data[FZ_CHUNK];
	struct gpumig_compat c;
	struct gpumig_writer w;
	size_t len, i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (i = 0; i < sizeof(data); i++)
		data[i] = (u8)(i * 31 + 7);
	fz_compat(&c);

	/* Header and end only. */
	gpumig_writer_init(&w);
	len = 2;
	out[0] = 1;
	out[1] = 0;
	EMIT(gpumig_emit_header(&w, out + len, sizeof(out) - len, &c));
	EMIT(gpumig_emit_end(&w, out + len, sizeof(out) - len));
	put(argv[1], "minimal", len);

	/* One of each section, small. */
	gpumig_writer_init(&w);
	len = 2;
	out[0] = 7;
	EMIT(gpumig_emit_header(&w, out + len, sizeof(out) - len, &c));
	EMIT(gpumig_emit_vram(&w, out + len, sizeof(out) - len, 4096, data, 256));
	EMIT(gpumig_emit_vram(&w, out + len, sizeof(out) - len, 65536, NULL, 65536));
	EMIT(gpumig_emit_zero(&w, out + len, sizeof(out) - len, 131072, FZ_VRAM_SIZE - 131072));
	EMIT(gpumig_emit_blob(&w, out + len, sizeof(out) - len, GPUMIG_SEC_NOTE, "note", 4));
	EMIT(gpumig_emit_blob(&w, out + len, sizeof(out) - len, GPUMIG_SEC_ARCH, data, 200));
	EMIT(gpumig_emit_vendor(&w, out + len, sizeof(out) - len, 0, data, 64));
	EMIT(gpumig_emit_arch_part(&w, out + len, sizeof(out) - len, 1, 3, data, 48));
	EMIT(gpumig_emit_end(&w, out + len, sizeof(out) - len));
	put(argv[1], "every-section", len);
	out[1] = 0x80;
	put(argv[1], "every-section-repair", len);

	/* A large chunk at the very end of VRAM. */
	gpumig_writer_init(&w);
	len = 2;
	out[0] = 0x33;
	EMIT(gpumig_emit_header(&w, out + len, sizeof(out) - len, &c));
	EMIT(gpumig_emit_vram(&w, out + len, sizeof(out) - len,
			      FZ_VRAM_SIZE - FZ_CHUNK, data, FZ_CHUNK));
	EMIT(gpumig_emit_end(&w, out + len, sizeof(out) - len));
	put(argv[1], "last-chunk", len);

	/* The same with checksum repair on, for the fuzzer to mutate. */
	out[1] = 0x80;
	put(argv[1], "last-chunk-repair", len);

	/* Post-copy: the announcement, then a manifest at the end. */
	gpumig_writer_init(&w);
	len = 2;
	out[0] = 0x21;
	out[1] = 0;
	EMIT(gpumig_emit_header(&w, out + len, sizeof(out) - len, &c));
	{
		struct {
			struct gpumig_wire_owed o;
			u8 map[4];
		} __attribute__((packed)) ow = { .map = { 0x81, 0x00, 0x10, 0x03 } };
		struct gpumig_wire_postcopy pc = { .token = { 0x47, 0x4d } };

		memcpy(ow.o.token, pc.token, sizeof(pc.token));
		ow.o.first = 0;
		ow.o.nr_blocks = 26;
		EMIT(gpumig_emit_blob(&w, out + len, sizeof(out) - len, GPUMIG_SEC_POSTCOPY,
				      &pc, sizeof(pc)));
		EMIT(gpumig_emit_zero(&w, out + len, sizeof(out) - len, 65536, 65536));
		EMIT(gpumig_emit_blob(&w, out + len, sizeof(out) - len, GPUMIG_SEC_OWED,
				      &ow, sizeof(ow)));
	}
	EMIT(gpumig_emit_blob(&w, out + len, sizeof(out) - len, GPUMIG_SEC_ARCH, data, 200));
	EMIT(gpumig_emit_end(&w, out + len, sizeof(out) - len));
	put(argv[1], "postcopy", len);

	/* An incompatible source. */
	gpumig_writer_init(&w);
	len = 2;
	c.nr_queues = 64;
	EMIT(gpumig_emit_header(&w, out + len, sizeof(out) - len, &c));
	EMIT(gpumig_emit_end(&w, out + len, sizeof(out) - len));
	put(argv[1], "incompatible", len);
	return 0;
}
