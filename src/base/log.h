/* Leveled logging to stderr. The level is the one piece of global mutable state besides
 * the CPU feature table; it is set once from --log-level before work starts. */
#ifndef HR_BASE_LOG_H
#define HR_BASE_LOG_H

typedef enum { HR_LOG_DEBUG, HR_LOG_INFO, HR_LOG_WARN, HR_LOG_ERROR, HR_LOG_OFF } hr_log_level;

extern hr_log_level hr_log_threshold;

/* Parses "debug|info|warn|error|off"; returns 0 on success, -1 on an unknown name. */
int hr_log_set_level(const char *name);
void hr_log(hr_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define HR_DEBUG(...) hr_log(HR_LOG_DEBUG, __VA_ARGS__)
#define HR_INFO(...) hr_log(HR_LOG_INFO, __VA_ARGS__)
#define HR_WARN(...) hr_log(HR_LOG_WARN, __VA_ARGS__)
#define HR_ERROR(...) hr_log(HR_LOG_ERROR, __VA_ARGS__)

#endif
