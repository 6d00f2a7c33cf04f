/* A minimal OpenAI-style streaming server for benchmarks/client_capacity.py, flood mode.
 *
 * Every open stream gets one SSE event per pass of the loop, each in its own write()
 * (HTTP/1.1 chunked, keep-alive), as fast as its socket takes it. Written in C so that
 * it costs the machine less CPU per token than any client it measures (the Python
 * server spends about 14 us per token at 256 streams, more than the clients): the
 * client, not the server, must be the limit of a capacity figure.
 *
 * Routes: POST /v1/completions and /v1/chat/completions (stream; "max_tokens" or
 * "max_completion_tokens", "include_usage"), GET /health, GET /v1/models, GET /truth
 * (tokens, streams, peak_open_streams, server_cpu_s), POST /truth/reset.
 * Listens on 127.0.0.1 only; prints "listening on 127.0.0.1:PORT"; stops on SIGTERM.
 *
 *   cc -O2 -o flood_server flood_server.c && ./flood_server 0 [cpu]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 65536
#define IN_CAP 65536
#define OUT_CAP 65536

static const char COMPLETION_EVENT[] =
    "data: {\"id\":\"cmpl-0f1e2d3c4b5a69788796a5b4c3d2e1f0\",\"object\":\"text_completion\","
    "\"created\":1730000000,\"model\":\"bench-model\",\"choices\":[{\"index\":0,\"text\":\" tok\","
    "\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}],\"usage\":null}\n\n";
static const char CHAT_EVENT[] =
    "data: {\"id\":\"chatcmpl-0f1e2d3c4b5a69788796a5b4c3d2e1f0\",\"object\":\"chat.completion."
    "chunk\",\"created\":1730000000,\"model\":\"bench-model\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\" tok\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
static const char STREAM_HEADERS[] =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    "transfer-encoding: chunked\r\n\r\n";

typedef struct {
    int fd;
    int open;
    char in[IN_CAP];
    size_t in_len;
    char out[OUT_CAP]; /* bytes the socket did not take yet */
    size_t out_len, out_off;
    int streaming, chat, usage;
    long left, total;
    int queued; /* in the flood ring */
} Conn;

static Conn *conns[MAX_CONNS];
static int ring[MAX_CONNS], ring_len;
static int epfd;
static volatile sig_atomic_t stopping;
static long truth_tokens, truth_streams, truth_open, truth_peak;
static double truth_cpu0;
static char completion_chunk[1024], chat_chunk[1024];
static size_t completion_len, chat_len;

static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
           u.ru_stime.tv_usec / 1e6;
}

static size_t frame(char *dst, const char *payload, size_t n) {
    int head = sprintf(dst, "%zx\r\n", n);
    memcpy(dst + head, payload, n);
    memcpy(dst + head + n, "\r\n", 2);
    return head + n + 2;
}

static void watch(Conn *c, unsigned events) {
    struct epoll_event ev = {.events = events, .data.fd = c->fd};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void close_conn(Conn *c) {
    if (c->streaming) truth_open--;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->open = 0;
    c->streaming = 0;
}

/* Write what is pending, then ``data``; keep what the socket does not take. 0: closed. */
static int send_bytes(Conn *c, const char *data, size_t n) {
    if (c->out_len > c->out_off || n == 0) {
        if (n) {
            if (c->out_len + n > OUT_CAP) return 0;
            memcpy(c->out + c->out_len, data, n);
            c->out_len += n;
        }
        data = NULL;
        n = 0;
    }
    while (c->out_off < c->out_len) {
        ssize_t w = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (w < 0) {
            if (errno == EAGAIN) {
                watch(c, EPOLLIN | EPOLLOUT);
                return 1;
            }
            return 0;
        }
        c->out_off += (size_t)w;
    }
    c->out_off = c->out_len = 0;
    if (n) {
        ssize_t w = write(c->fd, data, n);
        if (w < 0 && errno != EAGAIN) return 0;
        if (w < 0) w = 0;
        if ((size_t)w < n) {
            memcpy(c->out, data + w, n - (size_t)w);
            c->out_len = n - (size_t)w;
            watch(c, EPOLLIN | EPOLLOUT);
        }
    }
    return 1;
}

static void respond_json(Conn *c, const char *body) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                     "content-length: %zu\r\n\r\n%s",
                     strlen(body), body);
    if (!send_bytes(c, buf, (size_t)n)) close_conn(c);
}

static long json_int(const char *body, size_t len, const char *key) {
    char *at = memmem(body, len, key, strlen(key));
    if (!at) return -1;
    at = memchr(at, ':', (size_t)(body + len - at));
    return at ? strtol(at + 1, NULL, 10) : -1;
}

static void handle(Conn *c, const char *method, const char *path, const char *body,
                   size_t len) {
    if (!strcmp(method, "POST") &&
        (!strcmp(path, "/v1/completions") || !strcmp(path, "/v1/chat/completions"))) {
        long tokens = json_int(body, len, "\"max_completion_tokens\"");
        if (tokens < 0) tokens = json_int(body, len, "\"max_tokens\"");
        c->total = c->left = tokens > 0 ? tokens : 16;
        c->chat = strstr(path, "chat") != NULL;
        c->usage = memmem(body, len, "\"include_usage\": true", 21) != NULL ||
                   memmem(body, len, "\"include_usage\":true", 20) != NULL;
        c->streaming = 1;
        truth_open++;
        if (truth_open > truth_peak) truth_peak = truth_open;
        if (!c->queued) {
            c->queued = 1;
            ring[ring_len++] = c->fd;
        }
    } else if (!strcmp(path, "/truth") || !strcmp(path, "/truth/reset")) {
        char buf[256];
        if (!strcmp(path, "/truth/reset")) {
            truth_tokens = truth_streams = 0;
            truth_peak = truth_open;
            truth_cpu0 = cpu_s();
        }
        snprintf(buf, sizeof buf,
                 "{\"tokens\": %ld, \"streams\": %ld, \"peak_open_streams\": %ld, "
                 "\"server_cpu_s\": %.6f}",
                 truth_tokens, truth_streams, truth_peak, cpu_s() - truth_cpu0);
        respond_json(c, buf);
    } else if (!strcmp(path, "/v1/models")) {
        respond_json(c, "{\"object\": \"list\", \"data\": [{\"id\": \"bench-model\", "
                        "\"object\": \"model\", \"root\": \"bench-model\"}]}");
    } else {
        respond_json(c, "{}");
    }
}

/* Parse and answer every complete request in the buffer (one stream at a time). */
static void parse(Conn *c) {
    while (c->open && !c->streaming) {
        char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
        if (!end) return;
        size_t head = (size_t)(end - c->in) + 4, length = 0;
        *end = 0;
        for (char *line = strstr(c->in, "\r\n"); line; line = strstr(line + 2, "\r\n"))
            if (!strncasecmp(line + 2, "content-length:", 15)) length = strtoul(line + 17, 0, 10);
        if (c->in_len < head + length) {
            *end = '\r';
            return;
        }
        char method[16] = {0}, path[256] = {0};
        sscanf(c->in, "%15s %255s", method, path);
        handle(c, method, path, c->in + head, length);
        memmove(c->in, c->in + head + length, c->in_len - head - length);
        c->in_len -= head + length;
    }
}

/* One token to the stream on ``c``; 1 while it has more to send. */
static int write_token(Conn *c) {
    char buf[2048];
    size_t n = 0;
    if (c->left == c->total) {
        memcpy(buf, STREAM_HEADERS, sizeof STREAM_HEADERS - 1);
        n = sizeof STREAM_HEADERS - 1;
    }
    if (c->chat) {
        memcpy(buf + n, chat_chunk, chat_len);
        n += chat_len;
    } else {
        memcpy(buf + n, completion_chunk, completion_len);
        n += completion_len;
    }
    if (!send_bytes(c, buf, n)) {
        close_conn(c);
        return 0;
    }
    if (--c->left > 0) return 1;
    char tail[1024], payload[512];
    size_t t = 0;
    if (c->usage) {
        int p = snprintf(payload, sizeof payload,
                         "data: {\"id\":\"cmpl-usage\",\"object\":\"text_completion\",\"created\":"
                         "1730000000,\"model\":\"bench-model\",\"choices\":[],\"usage\":{"
                         "\"prompt_tokens\":8,\"completion_tokens\":%ld,\"total_tokens\":%ld}}\n\n",
                         c->total, c->total + 8);
        t = frame(tail, payload, (size_t)p);
    }
    t += frame(tail + t, "data: [DONE]\n\n", 14);
    memcpy(tail + t, "0\r\n\r\n", 5);
    t += 5;
    truth_tokens += c->total;
    truth_streams++;
    truth_open--;
    c->streaming = 0;
    if (!send_bytes(c, tail, t)) close_conn(c);
    else parse(c); /* a pipelined next request */
    return 0;
}

static void on_stop(int sig) {
    (void)sig;
    stopping = 1;
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 0;
    if (argc > 2) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(atoi(argv[2]), &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    completion_len = frame(completion_chunk, COMPLETION_EVENT, sizeof COMPLETION_EVENT - 1);
    chat_len = frame(chat_chunk, CHAT_EVENT, sizeof CHAT_EVENT - 1);

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) || listen(lfd, 4096)) {
        perror("bind/listen");
        return 1;
    }
    socklen_t alen = sizeof addr;
    getsockname(lfd, (struct sockaddr *)&addr, &alen);
    printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
    fflush(stdout);
    truth_cpu0 = cpu_s();

    epfd = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd}, events[1024];
    epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
    while (!stopping) {
        int n = epoll_wait(epfd, events, 1024, ring_len ? 0 : 100);
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == lfd) {
                int cfd;
                while ((cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    if (cfd >= MAX_CONNS) {
                        close(cfd);
                        continue;
                    }
                    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    if (!conns[cfd]) conns[cfd] = calloc(1, sizeof(Conn));
                    Conn *c = conns[cfd];
                    memset(c, 0, sizeof *c);
                    c->fd = cfd;
                    c->open = 1;
                    struct epoll_event cev = {.events = EPOLLIN, .data.fd = cfd};
                    epoll_ctl(epfd, EPOLL_CTL_ADD, cfd, &cev);
                }
                continue;
            }
            Conn *c = conns[fd];
            if (!c || !c->open) continue;
            if (events[i].events & EPOLLOUT) {
                if (!send_bytes(c, NULL, 0)) {
                    close_conn(c);
                    continue;
                }
                if (c->out_len == 0) watch(c, EPOLLIN);
            }
            if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                ssize_t r = read(fd, c->in + c->in_len, IN_CAP - c->in_len);
                if (r <= 0 && !(r < 0 && errno == EAGAIN)) {
                    close_conn(c);
                    continue;
                }
                if (r > 0) c->in_len += (size_t)r;
                parse(c);
            }
        }
        /* One pass of the ring: a token to every stream whose socket is not backed up. */
        int kept = 0;
        for (int i = 0; i < ring_len; i++) {
            Conn *c = conns[ring[i]];
            if (!c->open || !c->streaming) {
                c->queued = 0;
                continue;
            }
            if (c->out_len > 0 || write_token(c)) ring[kept++] = ring[i];
            else if (c->open && c->streaming) ring[kept++] = ring[i]; /* pipelined request */
            else c->queued = 0;
        }
        ring_len = kept;
    }
    return 0;
}
