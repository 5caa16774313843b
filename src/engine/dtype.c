/* SPDX-License-Identifier: MIT */
/* Element types and reduction operations: sizes, names, parsing. */
#include "engine/dtype.h"
#include "base/log.h"

#include <errno.h>
#include <string.h>

static const struct {
	const char *name;
	size_t size;
	int is_float;
} dtypes[PN_NDTYPES] = {
	[PN_INT8] = { "int8", 1, 0 },
	[PN_UINT8] = { "uint8", 1, 0 },
	[PN_INT32] = { "int32", 4, 0 },
	[PN_UINT32] = { "uint32", 4, 0 },
	[PN_INT64] = { "int64", 8, 0 },
	[PN_UINT64] = { "uint64", 8, 0 },
	[PN_HALF] = { "half", 2, 1 },
	[PN_BFLOAT16] = { "bfloat16", 2, 1 },
	[PN_FLOAT] = { "float", 4, 1 },
	[PN_DOUBLE] = { "double", 8, 1 },
};

/* Other spellings accepted by pn_dtype_parse (nccl-tests and common ones). */
static const struct {
	const char *alias;
	enum pn_dtype t;
} dtype_aliases[] = {
	{ "char", PN_INT8 },	 { "int", PN_INT32 },	  { "fp16", PN_HALF },
	{ "bf16", PN_BFLOAT16 }, { "f32", PN_FLOAT },	  { "fp32", PN_FLOAT },
	{ "float32", PN_FLOAT }, { "f64", PN_DOUBLE },
};

static const char *const redops[PN_NREDOPS] = {
	[PN_SUM] = "sum", [PN_PROD] = "prod", [PN_MIN] = "min", [PN_MAX] = "max", [PN_AVG] = "avg",
};

static int dtype_valid(enum pn_dtype t)
{
	return (unsigned)t < PN_NDTYPES;
}

size_t pn_dtype_size(enum pn_dtype t)
{
	return dtype_valid(t) ? dtypes[t].size : 0;
}

const char *pn_dtype_name(enum pn_dtype t)
{
	return dtype_valid(t) ? dtypes[t].name : "?";
}

int pn_dtype_is_float(enum pn_dtype t)
{
	return dtype_valid(t) && dtypes[t].is_float;
}

int pn_dtype_parse(const char *s, enum pn_dtype *t)
{
	char names[128];
	size_t i, len = 0;

	for (i = 0; s && i < PN_NDTYPES; i++) {
		if (!strcmp(s, dtypes[i].name)) {
			*t = (enum pn_dtype)i;
			return 0;
		}
	}
	for (i = 0; s && i < sizeof(dtype_aliases) / sizeof(dtype_aliases[0]); i++) {
		if (!strcmp(s, dtype_aliases[i].alias)) {
			*t = dtype_aliases[i].t;
			return 0;
		}
	}
	names[0] = '\0';
	for (i = 0; i < PN_NDTYPES; i++) {
		size_t n = strlen(dtypes[i].name);

		if (len + n + 2 > sizeof(names))
			break;
		if (len)
			names[len++] = ' ';
		memcpy(names + len, dtypes[i].name, n + 1);
		len += n;
	}
	return pn_err(-EINVAL, "unknown data type '%s' (valid: %s)", s ? s : "", names);
}

const char *pn_redop_name(enum pn_redop op)
{
	return (unsigned)op < PN_NREDOPS ? redops[op] : "?";
}

int pn_redop_parse(const char *s, enum pn_redop *op)
{
	size_t i;

	for (i = 0; s && i < PN_NREDOPS; i++) {
		if (!strcmp(s, redops[i])) {
			*op = (enum pn_redop)i;
			return 0;
		}
	}
	return pn_err(-EINVAL, "unknown reduction operation '%s' (valid: sum prod min max avg)",
		      s ? s : "");
}
