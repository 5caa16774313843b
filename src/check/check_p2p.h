/* SPDX-License-Identifier: MIT */
/*
 * The settings check's NVLink and P2P rows (check_p2p.c).
 */
#ifndef PENNY_CHECK_P2P_H
#define PENNY_CHECK_P2P_H

struct pn_check;

/* Every NVIDIA GPU's NVLinks up and down, every pair's P2P. */
int pn_settings_nvlink_p2p(struct pn_check *c);

#endif
