/* Leveled logging to stderr with a timestamp, as text or JSON lines; see log.h. Each line
 * is written with one fputs so lines of concurrent threads do not interleave. */
#include "base/log.h"

#include "base/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

hr_log_level hr_log_threshold = HR_LOG_WARN;
static int log_json;

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

int hr_log_set_format(const char *name) {
    if (strcmp(name, "text") && strcmp(name, "json")) return -1;
    log_json = !strcmp(name, "json");
    return 0;
}

const char *hr_log_level_name(void) { return level_names[hr_log_threshold]; }

const char *hr_log_format_name(void) { return log_json ? "json" : "text"; }

static int enabled(hr_log_level level) { return level >= hr_log_threshold && level < HR_LOG_OFF; }

/* "HH:MM:SS.mmm" (text) or an ISO 8601 UTC time (JSON). */
static void stamp(char *buf, size_t cap) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    if (log_json)
        snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    else
        snprintf(buf, cap, "%02d:%02d:%02d.%03ld", tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ts.tv_nsec / 1000000);
}

static void emit_json(hr_log_level level, const char *msg, const json_t *fields) {
    char ts[64];
    stamp(ts, sizeof ts);
    json_t *o = json_pack("{s:s, s:s, s:s}", "time", ts, "level", level_names[level], "msg", msg);
    if (!o) return;
    if (fields) json_object_update(o, (json_t *)fields);
    char *s = hr_json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(7));
    json_decref(o);
    if (!s) return;
    size_t n = strlen(s);
    s[n] = '\n';
    fwrite(s, 1, n + 1, stderr);
    free(s);
}

void hr_log(hr_log_level level, const char *fmt, ...) {
    if (!enabled(level)) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (log_json) return emit_json(level, msg, NULL);
    char ts[64], line[1100];
    stamp(ts, sizeof ts);
    snprintf(line, sizeof line, "%s %-5s %s\n", ts, level_names[level], msg);
    fputs(line, stderr);
}

/* " key=value" for one field; strings with spaces or quotes are written as JSON strings. */
static void add_field(char *line, size_t cap, size_t *n, const char *key, const json_t *v) {
    char *val = NULL;
    const char *s = json_string_value(v);
    if (s && !strpbrk(s, " \"=\n\t") && *s)
        val = strdup(s);
    else
        val = hr_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(7));
    if (!val) return;
    int k = snprintf(line + *n, cap - *n, " %s=%s", key, val);
    free(val);
    if (k > 0) *n = *n + (size_t)k < cap ? *n + (size_t)k : cap - 1;
}

void hr_log_fields(hr_log_level level, const char *msg, const json_t *fields) {
    if (!enabled(level)) return;
    if (log_json) return emit_json(level, msg, fields);
    char ts[64], line[4096];
    stamp(ts, sizeof ts);
    size_t n = (size_t)snprintf(line, sizeof line - 1, "%s %-5s %s", ts, level_names[level], msg);
    if (n >= sizeof line - 1) n = sizeof line - 2;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)fields, key, v) add_field(line, sizeof line - 1, &n, key, v);
    line[n] = '\n';
    line[n + 1] = 0;
    fputs(line, stderr);
}
