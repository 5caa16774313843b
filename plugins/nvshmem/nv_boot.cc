// SPDX-License-Identifier: MIT
/*
 * The nvshmem plugin's only contact with NVSHMEM's host library
 * (libnvshmem_host.so.3): bootstrap by unique id, the symmetric heap, and
 * the device state of a module loaded with cuModuleLoadData.  C++ because
 * NVSHMEM's host headers are; the rest of the plugin is C and calls these
 * extern "C" wrappers (nv_boot.h).  Nothing here exits the process: the
 * headers' nvshmemx_init_attr aborts on error, and the nvshmemi_init_thread
 * it calls lives in libnvshmem_device.a's host part (which registers a
 * statically linked program's device state), not in the host library; so
 * initialization calls the host library's nvshmemid_hostlib_init_attr with
 * the headers' version and no device-state callback: the plugin's kernels
 * are a cubin whose state nvshmemx_cumodule_init sets up.
 */
#include <nvshmem.h>
#include <nvshmemx.h>

#include <stdio.h>
#include <string.h>

#include "nv_boot.h"

extern "C" {

size_t pn_nvb_uid_size(void)
{
	return sizeof(nvshmemx_uniqueid_t);
}

int pn_nvb_get_uid(void *uid, size_t len)
{
	nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
	int ret;

	if (len != sizeof(id))
		return -1;
	ret = nvshmemx_get_uniqueid(&id);
	memcpy(uid, &id, sizeof(id));
	return ret;
}

int pn_nvb_init(int rank, int nranks, const void *uid, size_t len)
{
	nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
	nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
	nvshmemi_version_t ver = { NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
				   NVSHMEM_VENDOR_PATCH_VERSION };
	int provided = 0, ret;

	if (len != sizeof(id))
		return -1;
	memcpy(&id, uid, sizeof(id));
	ret = nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr);
	if (ret)
		return ret;
	return nvshmemid_hostlib_init_attr(NVSHMEM_THREAD_SERIALIZED, &provided,
					   NVSHMEMX_INIT_WITH_UNIQUEID, &attr, ver, NULL);
}

void pn_nvb_fini(void)
{
	/* the headers' nvshmem_finalize calls the device library's nvshmemi_finalize */
	nvshmemid_hostlib_finalize(NULL, NULL);
}

int pn_nvb_pe(int *me, int *n)
{
	*me = nvshmem_my_pe();
	*n = nvshmem_n_pes();
	return 0;
}

void *pn_nvb_malloc(size_t bytes)
{
	return nvshmem_malloc(bytes);
}

void pn_nvb_free(void *p)
{
	nvshmem_free(p);
}

void *pn_nvb_ptr(const void *p, int pe)
{
	return nvshmem_ptr(p, pe);
}

int pn_nvb_module_init(void *module)
{
	return nvshmemx_cumodule_init((CUmodule)module);
}

int pn_nvb_module_fini(void *module)
{
	return nvshmemx_cumodule_finalize((CUmodule)module);
}

const char *pn_nvb_version(void)
{
	static char v[32];

	snprintf(v, sizeof(v), "NVSHMEM %d.%d.%d (headers)", NVSHMEM_VENDOR_MAJOR_VERSION,
		 NVSHMEM_VENDOR_MINOR_VERSION, NVSHMEM_VENDOR_PATCH_VERSION);
	return v;
}
}
