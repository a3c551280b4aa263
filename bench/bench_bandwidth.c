/* Streaming read bandwidth of this machine with 1..N threads (default 2): the roofline
 * that CPU decode figures are reported against. */
#include <stdio.h>

#include "common.h"

int main(int argc, char **argv) {
    int max_threads = argc > 1 ? atoi(argv[1]) : 2;
    printf("streaming read, 1 GiB buffer, %s loads, median of 5\n",
           hr_cpu_level_name(hr_cpu()->level));
    for (int nt = 1; nt <= max_threads; nt++) {
        double lo, hi, med = bench_read_bandwidth(nt, &lo, &hi);
        printf("threads %d: %.1f GB/s (min %.1f, max %.1f)\n", nt, med, lo, hi);
    }
    return 0;
}
