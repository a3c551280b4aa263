/* The HTTP side of a request's channel (the engine side is in server.h): a queue of
 * copied engine events under a mutex and condvar, shared by reference count between the
 * HTTP thread and the engine, and the owner of the request the engine borrows. */
#ifndef HR_SERVER_SINK_H
#define HR_SERVER_SINK_H

#include "server/reply.h"

/* Takes ownership of req; the sink starts with two references (HTTP and engine). */
hr_gen_sink *hr_sink_create(hr_api_request *req);
/* Waits up to timeout_ms for events, applies every queued one to r; returns 1 once the
 * finish event has been applied. */
int hr_sink_drain(hr_gen_sink *s, hr_reply *r, int timeout_ms);
void hr_sink_cancel(hr_gen_sink *s);
/* Drops one reference: the HTTP side when done, and the engine side of a request that
 * was never submitted. */
void hr_sink_release(hr_gen_sink *s);

#endif
