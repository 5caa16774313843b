/* SPDX-License-Identifier: MIT */
/*
 * `penny top --plot FILE.svg`: the throughput of every port (and GPU) of a
 * recording or of a live run over time, drawn by base/plot's time plot:
 * panels NIC RX and NIC TX (Gb/s; GPU NVLink RX and TX when the samples
 * have GPU rows), one path per port, coloured by its rail (ports without a
 * rail grey, or a colour a port when no port has a rail; a rail's second
 * and later ports dashed), and a legend line per colour naming its rail,
 * ports and GPUs.
 */
#ifndef PENNY_TOPPLOT_H
#define PENNY_TOPPLOT_H

#include "top/record.h"

/* Write the plot of r to path through base/ofile.h: 0 or -errno (message set). */
int pn_topplot_write(const struct pn_replay *r, const char *path, const char *title);

#endif
