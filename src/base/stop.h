/* SPDX-License-Identifier: MIT */
/*
 * A stop (SIGTERM, SIGINT, SIGHUP: timeout(1), systemd, kill, Ctrl-C, a
 * batch system) of a run whose output must say so: penny check's output
 * files, penny bw's --json document.  pn_stop_start blocks those signals
 * that are not ignored (nohup, a background job's SIGINT) in every thread,
 * those started later too, and starts a thread that waits for one and
 * calls fn(arg, sig); when fn returns, the signal's default action ends
 * the process.  Once per process (a second start does nothing); 0, or a
 * negative errno with its message (the default actions stand).
 *
 * The output and the stop take turns: pn_stop_hold is 1 when the calling
 * thread may write (the other side waits until pn_stop_release; a thread
 * that holds it may hold it again), 0 when the output has its end already
 * (nothing more to write); a timeout in seconds (< 0: none) gives up
 * waiting, 0 too.  pn_stop_release(end): end 1 is the output's end.  A
 * child forked without exec calls pn_stop_child: the signals unblocked.
 */
#ifndef PENNY_BASE_STOP_H
#define PENNY_BASE_STOP_H

int pn_stop_start(void (*fn)(void *arg, int sig), void *arg);
int pn_stop_hold(double timeout);
void pn_stop_release(int end);
void pn_stop_child(void);

#endif
