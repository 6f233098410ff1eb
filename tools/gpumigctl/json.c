// SPDX-License-Identifier: GPL-2.0
/*
 * gpumigctl: JSON output, one object a line (JSON Lines).  Strings are
 * escaped as RFC 8259 requires ('"', '\\' and every control character),
 * and bytes that are not UTF-8 become U+FFFD, so that whatever a sysfs
 * file holds, each line is one valid JSON value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumigctl.h"

#define MAX_DEPTH 4

static bool first[MAX_DEPTH];
static int depth = -1;

/* The length of the valid UTF-8 sequence at @s, or 0. */
static int utf8_len(const unsigned char *s)
{
	int n, i;
	unsigned int c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

void json_string_value(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	int n;

	putchar('"');
	while (*s) {
		if (*s == '"' || *s == '\\') {
			printf("\\%c", *s++);
		} else if (*s < 0x20 || *s == 0x7f) {
			printf("\\u%04x", *s++);
		} else {
			n = utf8_len(s);
			if (!n) {
				fputs("\\ufffd", stdout);
				s++;
			} else {
				fwrite(s, 1, n, stdout);
				s += n;
			}
		}
	}
	putchar('"');
}

static void key(const char *k)
{
	if (!first[depth])
		fputs(", ", stdout);
	first[depth] = false;
	json_string_value(k);
	fputs(": ", stdout);
}

void json_begin(void)
{
	depth = 0;
	first[0] = true;
	putchar('{');
	json_int("schema", GPUMIGCTL_SCHEMA);
}

void json_end(void)
{
	puts("}");
	fflush(stdout);
	depth = -1;
}

void json_object(const char *k)
{
	key(k);
	putchar('{');
	first[++depth] = true;
}

void json_close(void)
{
	putchar('}');
	depth--;
}

void json_str(const char *k, const char *v)
{
	key(k);
	if (v)
		json_string_value(v);
	else
		fputs("null", stdout);
}

void json_int(const char *k, long long v)
{
	key(k);
	printf("%lld", v);
}

/* A number with its fraction, or null for NaN and the infinities. */
void json_num(const char *k, double v)
{
	key(k);
	if (v != v || v > 1e300 || v < -1e300)
		fputs("null", stdout);
	else
		printf("%.3f", v);
}

void json_bool(const char *k, bool v)
{
	key(k);
	fputs(v ? "true" : "false", stdout);
}

void json_null(const char *k)
{
	key(k);
	fputs("null", stdout);
}

/*
 * A descriptor line ("stream=1.1 reads=1.3 backend=2 type=simgpu-64M ...")
 * as an object: a decimal or 0x value as a number, any other as a string;
 * and the line itself as "descriptor", which check-compat takes back.
 */
void json_descriptor(const char *k, const char *line)
{
	char buf[512], *save = NULL, *kv;

	json_object(k);
	json_str("descriptor", line);
	snprintf(buf, sizeof(buf), "%s", line);
	for (kv = strtok_r(buf, "\n ", &save); kv; kv = strtok_r(NULL, "\n ", &save)) {
		char *v = strchr(kv, '='), *end;
		unsigned long long n;

		if (!v || v == kv)
			continue;
		*v++ = 0;
		key(kv);
		errno = 0;
		n = strtoull(v, &end, strncmp(v, "0x", 2) ? 10 : 16);
		if (*v >= '0' && *v <= '9' && !*end && !errno)
			printf("%llu", n);
		else
			json_string_value(v);
	}
	json_close();
}
