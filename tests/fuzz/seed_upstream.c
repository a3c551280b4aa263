/* Seed corpus for fuzz_upstream: writes replies as hearth's engine server sends them into
 * the folder argv[1] (run by tests/fuzz/run.sh): a JSON reply with Content-Length, a
 * chunked SSE stream with several events and its terminating chunk, a chunk extension
 * with a trailer, and a stream cut mid-chunk. The first byte of each is the piece seed. */
#include <stdio.h>

#include "seed.h"

static const char *const seeds[] = {
    "\x07HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    "11\r\n\r\n{\"ok\":true}",
    "\x0bHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    "Transfer-Encoding: chunked\r\n\r\n11\r\ndata: {\"a\":\"b\"}\n\n\r\ne\r\ndata: "
    "[DONE]\n\n\r\n0\r\n\r\n",
    "\x03HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n"
    "4;name=value\r\nabcd\r\n0\r\nX-Trailer: 1\r\n\r\n",
    "\x01HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n20\r\nevent: error\ndata",
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: seed_upstream DIR\n");
        return 2;
    }
    return seed_strings(argv[1], seeds, sizeof seeds / sizeof *seeds);
}
