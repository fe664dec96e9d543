/* podnet: gives the processes of one localcluster pod an address of their own on the loopback network.
 *
 * Loaded with LD_PRELOAD into every process of a pod, with LOCALCLUSTER_POD_IP set to the pod's address
 * (127.X.Y.Z: the whole of 127.0.0.0/8 is this machine's loopback on Linux, so no root and no interface
 * is needed). It moves what a pod's process means as "every address" or "this pod" to that address:
 *
 * - bind() of a port to the wildcard (0.0.0.0, ::) or to the loopback (127.0.0.1, ::1, ::ffff:127.0.0.1)
 *   binds the pod's address instead, so two pods listening on one port do not collide, as they would not
 *   on a cluster where each pod has a network namespace of its own. Port 0 is left alone: an ephemeral port
 *   collides with nothing, and a client socket bound to the wildcard must still reach the internet; an
 *   AF_UNSPEC wildcard bind of a TCP socket is left to connect() or listen(), as if it had not been made,
 *   so that the connection leaves from the pod's address as below;
 * - connect() to the loopback on a port the pod's own address listens on (TCP, from /proc/net/tcp and
 *   tcp6) goes to the pod's address: 127.0.0.1 and localhost reach the pod itself, as in a pod; any
 *   other loopback port is the host's, left alone.
 *
 * - a TCP connection to any loopback address from a socket not bound yet leaves from the pod's address, so
 *   the peer sees who called (getpeername), as it would on a cluster.
 *
 * - the addresses of this machine's network interfaces, as ioctl(SIOCGIFCONF) and SIOCGIFADDR give them, are the
 *   pod's address for every interface not on the loopback network, as a pod's eth0 carries its address: a
 *   program that tells its peers where it listens from its interfaces' addresses (Open MPI's TCP transport,
 *   which listens on every address at a port of its own) then names the pod's address, where the shim moved
 *   its listener. getifaddrs() (netlink) is left as it is.
 *
 * Everything else (the internet, the host's services, other pods' addresses) passes through untouched.
 * An IPv6 socket that is IPV6_V6ONLY cannot take an IPv4 address and is left alone.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

typedef int (*sockfn)(int, const struct sockaddr *, socklen_t);

static struct in_addr pod; /* network byte order */
static int enabled = -1;

static int setup(void) {
    if (enabled < 0) {
        const char *ip = getenv("LOCALCLUSTER_POD_IP");
        enabled = ip != NULL && inet_pton(AF_INET, ip, &pod) == 1;
    }
    return enabled;
}

static sockfn real(const char *name) { return (sockfn)dlsym(RTLD_NEXT, name); }

static int is_v4_loopback(in_addr_t a) { return a == htonl(INADDR_LOOPBACK); }

static int v6_only(int fd) {
    int on = 0;
    socklen_t len = sizeof on;
    return getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, &len) == 0 && on;
}

static int is_stream(int fd) {
    int type = 0;
    socklen_t len = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

/* Whether an IPv6 address is ::, ::1 or ::ffff:127.0.0.1 (wildcard_ok: also ::). */
static int is_v6_local(const struct in6_addr *a, int wildcard_ok) {
    if (wildcard_ok && IN6_IS_ADDR_UNSPECIFIED(a)) return 1;
    if (IN6_IS_ADDR_LOOPBACK(a)) return 1;
    if (IN6_IS_ADDR_V4MAPPED(a)) {
        in_addr_t v4;
        memcpy(&v4, &a->s6_addr[12], 4);
        return is_v4_loopback(v4) || (wildcard_ok && v4 == htonl(INADDR_ANY));
    }
    return 0;
}

static void map_v4(struct in6_addr *out) {
    memset(out, 0, sizeof *out);
    out->s6_addr[10] = out->s6_addr[11] = 0xff;
    memcpy(&out->s6_addr[12], &pod.s_addr, 4);
}

/* Whether a TCP socket listens on the pod's address and `port` (host order), from /proc/net/tcp{,6}. */
static int pod_listens(unsigned port) {
    char want4[16], want6[48], line[512];
    /* /proc/net/tcp prints the address as the 32-bit word in host order, in hex. */
    snprintf(want4, sizeof want4, "%08X:%04X", (unsigned)pod.s_addr, port);
    snprintf(want6, sizeof want6, "0000000000000000FFFF0000%08X:%04X", (unsigned)pod.s_addr, port);
    const char *files[2] = {"/proc/net/tcp", "/proc/net/tcp6"};
    const char *wants[2] = {want4, want6};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "re");
        if (f == NULL) continue;
        int found = 0;
        while (!found && fgets(line, sizeof line, f)) {
            char local[64], remote[64];
            unsigned state;
            if (sscanf(line, " %*d: %63s %63s %X", local, remote, &state) == 3 && state == 0x0A &&
                strcmp(local, wants[i]) == 0)
                found = 1;
        }
        fclose(f);
        if (found) return 1;
    }
    return 0;
}

/* An AF_UNSPEC address of all zeros, which Linux binds as 0.0.0.0 port 0 on an IPv4 socket (Open MPI's TCP
 * transport binds its connecting sockets so when it found no address for its interface). */
static int unspecified_any(const struct sockaddr *addr) {
    struct sockaddr_in in;
    memcpy(&in, addr, sizeof in);
    return in.sin_port == 0 && in.sin_addr.s_addr == htonl(INADDR_ANY);
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static sockfn real_bind;
    if (real_bind == NULL) real_bind = real("bind");
    if (addr != NULL && setup()) {
        if (addr->sa_family == AF_UNSPEC && len >= sizeof(struct sockaddr_in) && unspecified_any(addr) &&
            is_stream(fd)) {
            return 0; /* bound at connect() (from the pod's address when it goes to a pod), or at listen() */
        }
        if (addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
            struct sockaddr_in in;
            memcpy(&in, addr, sizeof in);
            if (in.sin_port != 0 && (in.sin_addr.s_addr == htonl(INADDR_ANY) || is_v4_loopback(in.sin_addr.s_addr))) {
                in.sin_addr = pod;
                return real_bind(fd, (struct sockaddr *)&in, sizeof in);
            }
        } else if (addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
            struct sockaddr_in6 in6;
            memcpy(&in6, addr, sizeof in6);
            if (in6.sin6_port != 0 && is_v6_local(&in6.sin6_addr, 1) && !v6_only(fd)) {
                map_v4(&in6.sin6_addr);
                return real_bind(fd, (struct sockaddr *)&in6, sizeof in6);
            }
        }
    }
    return real_bind(fd, addr, len);
}

/* Whether an IPv4 address (network order) is on the loopback network, 127.0.0.0/8. */
static int on_loopback(in_addr_t a) { return (ntohl(a) >> 24) == 127; }

/* Bind a socket that is not bound yet to the pod's address; its port is chosen at connect(), as for any
 * connection (IP_BIND_ADDRESS_NO_PORT), so connections from pods use no more ports than without the shim. */
static void leave_from_pod(int fd, int family) {
    static sockfn real_bind;
    if (real_bind == NULL) real_bind = real("bind");
    int on = 1;
    struct sockaddr_storage name;
    socklen_t len = sizeof name;
    if (getsockname(fd, (struct sockaddr *)&name, &len) != 0) return;
    if (family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&name;
        if (in->sin_port != 0 || in->sin_addr.s_addr != htonl(INADDR_ANY)) return;
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
        in->sin_addr = pod;
        real_bind(fd, (struct sockaddr *)in, sizeof *in);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&name;
        if (in6->sin6_port != 0 || !IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr)) return;
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
        map_v4(&in6->sin6_addr);
        real_bind(fd, (struct sockaddr *)in6, sizeof *in6);
    }
    /* A failed bind changes nothing: the connection then leaves from 127.0.0.1, as without the shim. */
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static sockfn real_connect;
    if (real_connect == NULL) real_connect = real("connect");
    if (addr != NULL && setup()) {
        if (addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
            struct sockaddr_in in;
            memcpy(&in, addr, sizeof in);
            if (on_loopback(in.sin_addr.s_addr) && is_stream(fd)) {
                if (is_v4_loopback(in.sin_addr.s_addr) && pod_listens(ntohs(in.sin_port))) in.sin_addr = pod;
                leave_from_pod(fd, AF_INET);
                return real_connect(fd, (struct sockaddr *)&in, sizeof in);
            }
        } else if (addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
            struct sockaddr_in6 in6;
            memcpy(&in6, addr, sizeof in6);
            in_addr_t v4 = 0;
            if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) memcpy(&v4, &in6.sin6_addr.s6_addr[12], 4);
            int loopback = IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr) || (v4 && on_loopback(v4));
            if (loopback && !v6_only(fd) && is_stream(fd)) {
                if (is_v6_local(&in6.sin6_addr, 0) && pod_listens(ntohs(in6.sin6_port))) map_v4(&in6.sin6_addr);
                if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) leave_from_pod(fd, AF_INET6);
                return real_connect(fd, (struct sockaddr *)&in6, sizeof in6);
            }
        }
    }
    return real_connect(fd, addr, len);
}

/* An interface's IPv4 address as a pod sees it: the pod's, unless it is on the loopback network. */
static void pod_interface(struct ifreq *req) {
    if (req->ifr_addr.sa_family != AF_INET) return;
    struct sockaddr_in in;
    memcpy(&in, &req->ifr_addr, sizeof in);
    if (on_loopback(in.sin_addr.s_addr)) return;
    in.sin_addr = pod;
    memcpy(&req->ifr_addr, &in, sizeof in);
}

int ioctl(int fd, unsigned long request, ...) {
    typedef int (*ioctlfn)(int, unsigned long, void *);
    static ioctlfn real_ioctl;
    if (real_ioctl == NULL) real_ioctl = (ioctlfn)dlsym(RTLD_NEXT, "ioctl");
    va_list args;
    va_start(args, request);
    void *arg = va_arg(args, void *);
    va_end(args);
    int done = real_ioctl(fd, request, arg);
    if (done != 0 || arg == NULL || !setup()) return done;
    if (request == SIOCGIFADDR) {
        pod_interface((struct ifreq *)arg);
    } else if (request == SIOCGIFCONF) {
        struct ifconf *conf = arg;
        if (conf->ifc_req != NULL)
            for (size_t i = 0; i < (size_t)conf->ifc_len / sizeof(struct ifreq); i++) pod_interface(&conf->ifc_req[i]);
    }
    return done;
}
