/* SPDX-License-Identifier: MIT */
/*
 * The nvshmem plugin's wrappers of NVSHMEM's host API (nv_boot.cc): plain C
 * types, NVSHMEM's return codes (0 = success).
 */
#ifndef PENNY_NV_BOOT_H
#define PENNY_NV_BOOT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

size_t pn_nvb_uid_size(void);
/* rank 0: a fresh unique id (len = pn_nvb_uid_size()) */
int pn_nvb_get_uid(void *uid, size_t len);
/* collective: every rank with rank 0's id */
int pn_nvb_init(int rank, int nranks, const void *uid, size_t len);
void pn_nvb_fini(void);
int pn_nvb_pe(int *me, int *n);
void *pn_nvb_malloc(size_t bytes);	/* collective: nvshmem_malloc */
void pn_nvb_free(void *p);		/* collective */
/* nvshmem_ptr: pe's copy of symmetric p by load/store, NULL when a NIC is between */
void *pn_nvb_ptr(const void *p, int pe);
/* NVSHMEM's device state in a module of kernels linked with libnvshmem_device */
int pn_nvb_module_init(void *module);
int pn_nvb_module_fini(void *module);
const char *pn_nvb_version(void);

#ifdef __cplusplus
}
#endif

#endif
