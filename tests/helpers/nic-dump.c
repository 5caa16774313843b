/* SPDX-License-Identifier: MIT */
/*
 * nic-dump: print what src/node/nic.c reads for every RDMA device, one
 * "dev port key=value ..." line per port, for tests over captured sysfs
 * trees (PENNY_SYSROOT or the first argument selects the root).
 */
#include "base/log.h"
#include "node/nic.h"
#include "node/sysfs.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	struct pn_nic_list l;
	const char *root = argc > 1 ? argv[1] : getenv("PENNY_SYSROOT");
	int i, j, ret;

	if (root && (ret = pn_sysfs_set_root(root))) {
		fprintf(stderr, "nic-dump: %s\n", pn_errmsg(ret));
		return 2;
	}
	ret = pn_nic_list_read(&l);
	if (ret) {
		fprintf(stderr, "nic-dump: %s\n", pn_errmsg(ret));
		return 1;
	}
	for (i = 0; i < l.n; i++) {
		const struct pn_nic *n = &l.nics[i];

		for (j = 0; j < n->nports; j++) {
			const struct pn_port *p = &n->ports[j];

			printf("%s %d parent=%s pci=%s vendor=0x%x type=%s state=%s phys=%s "
			       "rate=%g link=%s netdev=%s lid=%d gid_index=%d gid=%s gid_type=%s\n",
			       n->name, p->port, n->parent[0] ? n->parent : "-",
			       n->pci_busid[0] ? n->pci_busid : "-", n->vendor_id, n->node_type,
			       p->state_name, p->phys_state_name, p->rate_gbps, p->link_layer,
			       p->netdev[0] ? p->netdev : "-", p->lid, p->gid_index, p->gid,
			       p->gid_type[0] ? p->gid_type : "-");
		}
	}
	pn_nic_list_release(&l);
	return 0;
}
