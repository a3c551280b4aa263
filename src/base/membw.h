/* Streaming read bandwidth of this machine: the decode roofline that `hearth bench` and the
 * benchmark programs report against. */
#ifndef HR_BASE_MEMBW_H
#define HR_BASE_MEMBW_H

#include <stddef.h>

/* Median GB/s of 5 passes reading a bytes-long hugepage-advised buffer with n_threads
 * (<= 0: all CPUs); *lo and *hi (may be NULL) get the slowest and fastest pass. 0 when the
 * buffer or threads cannot be had. */
double hr_read_bandwidth(int n_threads, size_t bytes, double *lo, double *hi);

#endif
