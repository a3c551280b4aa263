/* Leveled logging to stderr with a timestamp; see log.h. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

hr_log_level hr_log_threshold = HR_LOG_WARN;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

int hr_log_set_level(const char *name) {
    for (int i = 0; i <= HR_LOG_OFF; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            hr_log_threshold = (hr_log_level)i;
            return 0;
        }
    }
    return -1;
}

void hr_log(hr_log_level level, const char *fmt, ...) {
    if (level < hr_log_threshold || level >= HR_LOG_OFF) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[1024];
    int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld %-5s ", tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
