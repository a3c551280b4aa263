/* Leveled logging to stderr, as text lines or JSON objects (--log-format). The level and
 * format are the one piece of global mutable state besides the CPU feature table; they are
 * set once from the command line before work starts. */
#ifndef HR_BASE_LOG_H
#define HR_BASE_LOG_H

#include <jansson.h>

typedef enum { HR_LOG_DEBUG, HR_LOG_INFO, HR_LOG_WARN, HR_LOG_ERROR, HR_LOG_OFF } hr_log_level;

extern hr_log_level hr_log_threshold;

/* Parses "debug|info|warn|error|off"; returns 0 on success, -1 on an unknown name. */
int hr_log_set_level(const char *name);
/* "text" (default: "HH:MM:SS.mmm level message") or "json" (one object per line:
 * {"time", "level", "msg", ...fields}); returns -1 on an unknown name. */
int hr_log_set_format(const char *name);
/* The names hr_log_set_level and hr_log_set_format take for the current settings (to pass
 * them on to a child process). */
const char *hr_log_level_name(void);
const char *hr_log_format_name(void);
void hr_log(hr_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A message with structured fields (an object, borrowed): text lines get " key=value"
 * after msg (strings quoted when they hold spaces), JSON lines get the fields as members. */
void hr_log_fields(hr_log_level level, const char *msg, const json_t *fields);

#define HR_DEBUG(...) hr_log(HR_LOG_DEBUG, __VA_ARGS__)
#define HR_INFO(...) hr_log(HR_LOG_INFO, __VA_ARGS__)
#define HR_WARN(...) hr_log(HR_LOG_WARN, __VA_ARGS__)
#define HR_ERROR(...) hr_log(HR_LOG_ERROR, __VA_ARGS__)

#endif
