/* The HTTP side of a request's channel (the engine side, hr_gen_sink, is in server.h):
 * one queue of copied engine events under a mutex and condvar for all of a request's
 * choices, each choice fed by its own engine sink; shared by reference count between the
 * HTTP thread and the sinks, and the owner of the request the engine borrows. */
#ifndef HR_SERVER_SINK_H
#define HR_SERVER_SINK_H

#include "server/reply.h"

typedef struct hr_gen_chan hr_gen_chan;

/* What a request cancelled for its output backlog (hr_chan_create) ends with. */
#define HR_BACKLOG_MSG "the client stopped reading: its output backlog reached the server's limit"

/* Takes ownership of req; one sink per choice (req->n). References: the HTTP side's and
 * one per sink, dropped by its finish or by hr_chan_unsubmitted. max_backlog: the most
 * bytes of output the channel holds for a client that does not take them (a stalled SSE
 * reader); past it the request is cancelled and ends with HR_BACKLOG_MSG. */
hr_gen_chan *hr_chan_create(hr_api_request *req, size_t max_backlog);
hr_gen_sink *hr_chan_sink(hr_gen_chan *c, int i);
/* What to submit with sink i: the request, with seed + i when it has a seed so seeded
 * choices differ yet repeat. Borrows the request's fields; lives as long as c. */
const hr_api_request *hr_chan_request(const hr_gen_chan *c, int i);
/* Sink i never reached the engine: drops its reference, and no finish is awaited from it. */
void hr_chan_unsubmitted(hr_gen_chan *c, int i);
/* Waits up to timeout_ms for events, applies every queued one to r; returns 1 once every
 * awaited finish has been applied. An event the engine's side could not copy (out of
 * memory) fails r (hr_reply_fail) and cancels the request: a reply never misses one. */
int hr_chan_drain(hr_gen_chan *c, hr_reply *r, int timeout_ms);
/* The client is gone: hr_gen_sink_cancelled turns true for every sink, and cancel (the
 * backend's, may be NULL) is called with each submitted one. */
void hr_chan_cancel(hr_gen_chan *c, void (*cancel)(void *ctx, hr_gen_sink *s), void *ctx);
/* As hr_chan_cancel, for the server's reasons (HTTP thread only): the choices the
 * cancel ends are applied as errors with msg (static), the others as they finish. */
void hr_chan_cut(hr_gen_chan *c, void (*cancel)(void *ctx, hr_gen_sink *s), void *ctx,
                 const char *msg);
/* Drops the HTTP side's reference. */
void hr_chan_release(hr_gen_chan *c);

#endif
