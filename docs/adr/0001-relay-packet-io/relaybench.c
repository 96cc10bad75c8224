// Departure precision of a relay's two packet-I/O options on an rtcbench testbed (ADR 0001):
//   packet: an AF_PACKET socket on the net namespace's veth to B; the frame goes out with sendto;
//   tun:    an IPv4 packet written to a TUN device in the net namespace; its kernel forwards it to B.
// Sends PACKETS datagrams at RATE, each at its scheduled time (clock_nanosleep, then optionally a
// spin for the last SPIN_US), and reports the wake-up error, the cost of the send call, and the
// kernel receive timestamp at B's UDP socket minus the scheduled time. A throwaway prototype: the
// relay itself will be Rust. Run it with measure.py beside it.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/ethernet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }
static int64_t now(void) { struct timespec t; clock_gettime(CLOCK_REALTIME, &t); return ns(t); }
static void enter(const char *netns) {
    int fd = open(netns, O_RDONLY); if (fd < 0 || setns(fd, CLONE_NEWNET)) { perror(netns); exit(1); } close(fd);
}
static uint16_t csum(const void *d, int n, uint32_t s) {
    const uint8_t *p = d; for (int i = 0; i + 1 < n; i += 2) s += (p[i] << 8) | p[i + 1];
    if (n & 1) s += p[n - 1] << 8;
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return ~s;
}
static int cmp(const void *a, const void *b) { int64_t x = *(int64_t *)a, y = *(int64_t *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv) {
    // argv: mode netns_net netns_b ifname(net side of B or tun name) src_ip dst_ip dst_mac src_mac rate count spin_us
    const char *mode = argv[1]; int rate = atoi(argv[9]), count = atoi(argv[10]), spin_us = atoi(argv[11]);
    prctl(PR_SET_TIMERSLACK, 1);
    enter(argv[3]);
    int rx = socket(AF_INET, SOCK_DGRAM, 0); int one = 1, big = 16 << 20;
    setsockopt(rx, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    struct sockaddr_in b = {.sin_family = AF_INET, .sin_port = htons(9000)}; inet_pton(AF_INET, argv[6], &b.sin_addr);
    if (bind(rx, (void *)&b, sizeof b)) { perror("bind"); return 1; }
    enter(argv[2]);
    int tx; struct sockaddr_ll ll = {0};
    if (!strcmp(mode, "packet")) {
        tx = socket(AF_PACKET, SOCK_RAW, 0);
        setsockopt(tx, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
        ll.sll_family = AF_PACKET; ll.sll_ifindex = if_nametoindex(argv[4]); ll.sll_halen = 6;
    } else {
        tx = open("/dev/net/tun", O_RDWR); struct ifreq ifr = {0}; ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
        strncpy(ifr.ifr_name, argv[4], IFNAMSIZ - 1); if (ioctl(tx, TUNSETIFF, &ifr)) { perror("tun"); return 1; }
        char cmd[256]; snprintf(cmd, sizeof cmd, "ip link set %s up && ip addr add 10.9.9.1/24 dev %s && echo 1 > /proc/sys/net/ipv4/ip_forward && for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > $f; done", argv[4], argv[4]);
        if (system(cmd)) return 1;
    }
    uint8_t frame[14 + 20 + 8 + 32]; memset(frame, 0, sizeof frame);
    unsigned m[6]; sscanf(argv[7], "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]); for (int i = 0; i < 6; i++) frame[i] = m[i];
    sscanf(argv[8], "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]); for (int i = 0; i < 6; i++) frame[6 + i] = m[i];
    frame[12] = 0x08; struct iphdr *ip = (void *)(frame + 14); struct udphdr *udp = (void *)(frame + 34);
    ip->version = 4; ip->ihl = 5; ip->ttl = 64; ip->protocol = 17; ip->tot_len = htons(sizeof frame - 14);
    inet_pton(AF_INET, argv[5], &ip->saddr); inet_pton(AF_INET, argv[6], &ip->daddr); ip->check = htons(csum(ip, 20, 0));
    udp->source = htons(9001); udp->dest = htons(9000); udp->len = htons(8 + 32);
    int64_t *sched = calloc(count, 8), *late = calloc(count, 8), *wake = calloc(count, 8), *call = calloc(count, 8);
    int64_t period = 1000000000LL / rate, t0 = now() + 100000000;
    for (int i = 0; i < count; i++) {
        int64_t t = t0 + i * period; sched[i] = t;
        int64_t sleep_until = t - spin_us * 1000LL;
        struct timespec ts = {sleep_until / 1000000000, sleep_until % 1000000000};
        clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
        while (now() < t) ;
        int64_t w = now(); wake[i] = w - t;
        memcpy(frame + 42, &i, 4); udp->check = 0;
        uint8_t ph[12]; memcpy(ph, &ip->saddr, 8); ph[8] = 0; ph[9] = 17; ph[10] = 0; ph[11] = 40;
        uint32_t s = 0; for (int k = 0; k < 12; k += 2) s += (ph[k] << 8) | ph[k + 1];
        udp->check = htons(csum(udp, 40, s));
        if (!strcmp(mode, "packet")) sendto(tx, frame, sizeof frame, 0, (void *)&ll, sizeof ll);
        else write(tx, frame + 14, sizeof frame - 14);
        call[i] = now() - w;
    }
    int got = 0; char buf[2048], cbuf[256];
    for (;;) {
        struct iovec iov = {buf, sizeof buf}; struct msghdr mh = {0}; mh.msg_iov = &iov; mh.msg_iovlen = 1; mh.msg_control = cbuf; mh.msg_controllen = sizeof cbuf;
        if (recvmsg(rx, &mh, MSG_DONTWAIT) < 0) break;
        int seq; memcpy(&seq, buf, 4);
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
            if (c->cmsg_type == SO_TIMESTAMPNS) { struct timespec ts; memcpy(&ts, CMSG_DATA(c), sizeof ts); late[got++] = ns(ts) - sched[seq]; }
    }
    qsort(late, got, 8, cmp); qsort(wake, count, 8, cmp); qsort(call, count, 8, cmp);
    printf("%-6s spin=%3dus rate=%d got=%d/%d | wake-up late p50 %6.1f p99 %6.1f max %7.1f us | send call p50 %5.1f p99 %6.1f us | at receiver late p50 %6.1f p99 %6.1f max %7.1f us\n",
           mode, spin_us, rate, got, count, wake[count / 2] / 1e3, wake[count * 99 / 100] / 1e3, wake[count - 1] / 1e3,
           call[count / 2] / 1e3, call[count * 99 / 100] / 1e3,
           late[got / 2] / 1e3, late[got * 99 / 100] / 1e3, late[got - 1] / 1e3);
    return 0;
}
