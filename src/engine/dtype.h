/* SPDX-License-Identifier: MIT */
/* Element types and reduction operations, with nccl-tests' names. */
#ifndef PENNY_DTYPE_H
#define PENNY_DTYPE_H

#include <stddef.h>

enum pn_dtype {
	PN_INT8 = 0,
	PN_UINT8,
	PN_INT32,
	PN_UINT32,
	PN_INT64,
	PN_UINT64,
	PN_HALF,	/* IEEE binary16 */
	PN_BFLOAT16,
	PN_FLOAT,
	PN_DOUBLE,
	PN_NDTYPES
};

enum pn_redop {
	PN_SUM = 0,
	PN_PROD,
	PN_MIN,
	PN_MAX,
	PN_AVG,		/* sum, then divided by nranks once (fixed order) */
	PN_NREDOPS
};

/* Bytes per element. */
size_t pn_dtype_size(enum pn_dtype t);
/* nccl-tests names: "int8" "uint8" "int32" "uint32" "int64" "uint64"
 * "half" "bfloat16" "float" "double"; parse also accepts aliases
 * ("fp16", "bf16", "f32", "fp32", "float32", "f64", "int", "char"). */
const char *pn_dtype_name(enum pn_dtype t);
int pn_dtype_parse(const char *s, enum pn_dtype *t);
/* "sum" "prod" "min" "max" "avg" */
const char *pn_redop_name(enum pn_redop op);
int pn_redop_parse(const char *s, enum pn_redop *op);
int pn_dtype_is_float(enum pn_dtype t);

#endif
