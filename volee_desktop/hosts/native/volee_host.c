/*
 * volee_host.c: the native host, a drop-in for volee_desktop/hosts/main.py + host.py.
 *
 * One process per agent that holds the program in a PTY and serves a Unix socket, with the
 * Python host's command line, record, --ready-fd line, wire framing, requests, replies and
 * errors (the Python files in volee_desktop/hosts/ say what each does; this file follows them function by
 * function, and names the Python it mirrors).  C11 and libc only: it costs about 1 MB RSS
 * where a CPython host costs 8.4 MB.
 *
 * Strings are kept as Python keeps them: a str read from JSON or from the command line is
 * held as "generalized UTF-8" (a lone surrogate as its 3-byte form), so lengths, positions,
 * comparisons and reprs come out as Python's.  Command-line bytes that are not UTF-8 are
 * decoded as Python decodes argv (surrogateescape) and encoded back the same way.
 *
 * A nesting deeper than CPython's recursion limit is a bad frame here as there (the same
 * words); a timer of NaN or infinity waits for ever without spinning; out of descriptors the
 * listener rests a moment.  The program does not inherit the --ready-fd (the Python host
 * leaked it into the program until it wrote its line).
 *
 * Build: cc -O2 -s -o volee-host volee_host.c  (python -m volee_desktop.hosts.native build)
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <stddef.h>
#include <sys/time.h>

extern char **environ;

/* host.py, requests.py, wire.py */
#define SCROLLBACK_BYTES (256 * 1024)
#define CLIENT_BACKLOG_LIMIT (4 * 1024 * 1024)
#define DEFAULT_LINGER 2.0
#define HANGUP_GRACE 3.0
#define LEFTOVER_GRACE 1.0
#define LEFTOVER_WAIT 5.0
#define LEFTOVER_CHECK 0.05
#define REPLAY_BYTES (64 * 1024)
/* A watch's every_ms: output held back at most this long, and sent at once from this size. */
#define MAX_EVERY_MS 10000
#define HOLD_LIMIT (64 * 1024)
/* For this long after a client sent the program keys or a size, its output is held back from
   no watch (requests.STIRRED). */
#define STIRRED 2.0
#define SCREEN_WINDOW (16 * 1024)
#define ENTER_PAUSE 0.1
#define MAX_FRAME (16 * 1024 * 1024)
#define HEADER_SIZE 5
/* CPython's JSON scanner recurses; past its recursion limit (1000, less the host's own
 * frames: 990 to 992 containers deep in a Python 3.11 host, as its stack is) it is a bad
 * frame, here too. */
#define MAX_DEPTH 990
/* A reply bigger than this could never be queued (CLIENT_BACKLOG_LIMIT): stop building it. */
#define REPLY_CAP (CLIENT_BACKLOG_LIMIT + 1024)
#define INT_MAX_STR_DIGITS 4300

/* ------------------------------------------------------------------------------------ */
/* growable byte buffers; a failed allocation marks the buffer, never crashes             */

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} buf_t;

static int buf_reserve(buf_t *b, size_t extra) {
    if (b->oom) return -1;
    if (extra > SIZE_MAX / 2 - b->len) { b->oom = 1; return -1; }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}

static void buf_add(buf_t *b, const void *data, size_t n) {
    if (n == 0 || buf_reserve(b, n) < 0) return;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void buf_puts(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }
static void buf_putc(buf_t *b, char c) { buf_add(b, &c, 1); }

static void buf_printf(buf_t *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) { buf_add(b, small, (size_t)n); return; }
    if (buf_reserve(b, (size_t)n) < 0) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void buf_free(buf_t *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

static const char *buf_str(buf_t *b) { return b->p && !b->oom ? b->p : ""; }

/* ------------------------------------------------------------------------------------ */
/* Unicode as Python 3.11 sees it                                                         */

/* Generated from Python 3.11.7 (Unicode 14.0.0): str.isprintable, str.isspace, str.isdecimal. */
static const uint32_t NONPRINTABLE[][2] = {
    {0x0, 0x1f}, {0x7f, 0xa0}, {0xad, 0xad}, {0x378, 0x379},
    {0x380, 0x383}, {0x38b, 0x38b}, {0x38d, 0x38d}, {0x3a2, 0x3a2},
    {0x530, 0x530}, {0x557, 0x558}, {0x58b, 0x58c}, {0x590, 0x590},
    {0x5c8, 0x5cf}, {0x5eb, 0x5ee}, {0x5f5, 0x605}, {0x61c, 0x61c},
    {0x6dd, 0x6dd}, {0x70e, 0x70f}, {0x74b, 0x74c}, {0x7b2, 0x7bf},
    {0x7fb, 0x7fc}, {0x82e, 0x82f}, {0x83f, 0x83f}, {0x85c, 0x85d},
    {0x85f, 0x85f}, {0x86b, 0x86f}, {0x88f, 0x897}, {0x8e2, 0x8e2},
    {0x984, 0x984}, {0x98d, 0x98e}, {0x991, 0x992}, {0x9a9, 0x9a9},
    {0x9b1, 0x9b1}, {0x9b3, 0x9b5}, {0x9ba, 0x9bb}, {0x9c5, 0x9c6},
    {0x9c9, 0x9ca}, {0x9cf, 0x9d6}, {0x9d8, 0x9db}, {0x9de, 0x9de},
    {0x9e4, 0x9e5}, {0x9ff, 0xa00}, {0xa04, 0xa04}, {0xa0b, 0xa0e},
    {0xa11, 0xa12}, {0xa29, 0xa29}, {0xa31, 0xa31}, {0xa34, 0xa34},
    {0xa37, 0xa37}, {0xa3a, 0xa3b}, {0xa3d, 0xa3d}, {0xa43, 0xa46},
    {0xa49, 0xa4a}, {0xa4e, 0xa50}, {0xa52, 0xa58}, {0xa5d, 0xa5d},
    {0xa5f, 0xa65}, {0xa77, 0xa80}, {0xa84, 0xa84}, {0xa8e, 0xa8e},
    {0xa92, 0xa92}, {0xaa9, 0xaa9}, {0xab1, 0xab1}, {0xab4, 0xab4},
    {0xaba, 0xabb}, {0xac6, 0xac6}, {0xaca, 0xaca}, {0xace, 0xacf},
    {0xad1, 0xadf}, {0xae4, 0xae5}, {0xaf2, 0xaf8}, {0xb00, 0xb00},
    {0xb04, 0xb04}, {0xb0d, 0xb0e}, {0xb11, 0xb12}, {0xb29, 0xb29},
    {0xb31, 0xb31}, {0xb34, 0xb34}, {0xb3a, 0xb3b}, {0xb45, 0xb46},
    {0xb49, 0xb4a}, {0xb4e, 0xb54}, {0xb58, 0xb5b}, {0xb5e, 0xb5e},
    {0xb64, 0xb65}, {0xb78, 0xb81}, {0xb84, 0xb84}, {0xb8b, 0xb8d},
    {0xb91, 0xb91}, {0xb96, 0xb98}, {0xb9b, 0xb9b}, {0xb9d, 0xb9d},
    {0xba0, 0xba2}, {0xba5, 0xba7}, {0xbab, 0xbad}, {0xbba, 0xbbd},
    {0xbc3, 0xbc5}, {0xbc9, 0xbc9}, {0xbce, 0xbcf}, {0xbd1, 0xbd6},
    {0xbd8, 0xbe5}, {0xbfb, 0xbff}, {0xc0d, 0xc0d}, {0xc11, 0xc11},
    {0xc29, 0xc29}, {0xc3a, 0xc3b}, {0xc45, 0xc45}, {0xc49, 0xc49},
    {0xc4e, 0xc54}, {0xc57, 0xc57}, {0xc5b, 0xc5c}, {0xc5e, 0xc5f},
    {0xc64, 0xc65}, {0xc70, 0xc76}, {0xc8d, 0xc8d}, {0xc91, 0xc91},
    {0xca9, 0xca9}, {0xcb4, 0xcb4}, {0xcba, 0xcbb}, {0xcc5, 0xcc5},
    {0xcc9, 0xcc9}, {0xcce, 0xcd4}, {0xcd7, 0xcdc}, {0xcdf, 0xcdf},
    {0xce4, 0xce5}, {0xcf0, 0xcf0}, {0xcf3, 0xcff}, {0xd0d, 0xd0d},
    {0xd11, 0xd11}, {0xd45, 0xd45}, {0xd49, 0xd49}, {0xd50, 0xd53},
    {0xd64, 0xd65}, {0xd80, 0xd80}, {0xd84, 0xd84}, {0xd97, 0xd99},
    {0xdb2, 0xdb2}, {0xdbc, 0xdbc}, {0xdbe, 0xdbf}, {0xdc7, 0xdc9},
    {0xdcb, 0xdce}, {0xdd5, 0xdd5}, {0xdd7, 0xdd7}, {0xde0, 0xde5},
    {0xdf0, 0xdf1}, {0xdf5, 0xe00}, {0xe3b, 0xe3e}, {0xe5c, 0xe80},
    {0xe83, 0xe83}, {0xe85, 0xe85}, {0xe8b, 0xe8b}, {0xea4, 0xea4},
    {0xea6, 0xea6}, {0xebe, 0xebf}, {0xec5, 0xec5}, {0xec7, 0xec7},
    {0xece, 0xecf}, {0xeda, 0xedb}, {0xee0, 0xeff}, {0xf48, 0xf48},
    {0xf6d, 0xf70}, {0xf98, 0xf98}, {0xfbd, 0xfbd}, {0xfcd, 0xfcd},
    {0xfdb, 0xfff}, {0x10c6, 0x10c6}, {0x10c8, 0x10cc}, {0x10ce, 0x10cf},
    {0x1249, 0x1249}, {0x124e, 0x124f}, {0x1257, 0x1257}, {0x1259, 0x1259},
    {0x125e, 0x125f}, {0x1289, 0x1289}, {0x128e, 0x128f}, {0x12b1, 0x12b1},
    {0x12b6, 0x12b7}, {0x12bf, 0x12bf}, {0x12c1, 0x12c1}, {0x12c6, 0x12c7},
    {0x12d7, 0x12d7}, {0x1311, 0x1311}, {0x1316, 0x1317}, {0x135b, 0x135c},
    {0x137d, 0x137f}, {0x139a, 0x139f}, {0x13f6, 0x13f7}, {0x13fe, 0x13ff},
    {0x1680, 0x1680}, {0x169d, 0x169f}, {0x16f9, 0x16ff}, {0x1716, 0x171e},
    {0x1737, 0x173f}, {0x1754, 0x175f}, {0x176d, 0x176d}, {0x1771, 0x1771},
    {0x1774, 0x177f}, {0x17de, 0x17df}, {0x17ea, 0x17ef}, {0x17fa, 0x17ff},
    {0x180e, 0x180e}, {0x181a, 0x181f}, {0x1879, 0x187f}, {0x18ab, 0x18af},
    {0x18f6, 0x18ff}, {0x191f, 0x191f}, {0x192c, 0x192f}, {0x193c, 0x193f},
    {0x1941, 0x1943}, {0x196e, 0x196f}, {0x1975, 0x197f}, {0x19ac, 0x19af},
    {0x19ca, 0x19cf}, {0x19db, 0x19dd}, {0x1a1c, 0x1a1d}, {0x1a5f, 0x1a5f},
    {0x1a7d, 0x1a7e}, {0x1a8a, 0x1a8f}, {0x1a9a, 0x1a9f}, {0x1aae, 0x1aaf},
    {0x1acf, 0x1aff}, {0x1b4d, 0x1b4f}, {0x1b7f, 0x1b7f}, {0x1bf4, 0x1bfb},
    {0x1c38, 0x1c3a}, {0x1c4a, 0x1c4c}, {0x1c89, 0x1c8f}, {0x1cbb, 0x1cbc},
    {0x1cc8, 0x1ccf}, {0x1cfb, 0x1cff}, {0x1f16, 0x1f17}, {0x1f1e, 0x1f1f},
    {0x1f46, 0x1f47}, {0x1f4e, 0x1f4f}, {0x1f58, 0x1f58}, {0x1f5a, 0x1f5a},
    {0x1f5c, 0x1f5c}, {0x1f5e, 0x1f5e}, {0x1f7e, 0x1f7f}, {0x1fb5, 0x1fb5},
    {0x1fc5, 0x1fc5}, {0x1fd4, 0x1fd5}, {0x1fdc, 0x1fdc}, {0x1ff0, 0x1ff1},
    {0x1ff5, 0x1ff5}, {0x1fff, 0x200f}, {0x2028, 0x202f}, {0x205f, 0x206f},
    {0x2072, 0x2073}, {0x208f, 0x208f}, {0x209d, 0x209f}, {0x20c1, 0x20cf},
    {0x20f1, 0x20ff}, {0x218c, 0x218f}, {0x2427, 0x243f}, {0x244b, 0x245f},
    {0x2b74, 0x2b75}, {0x2b96, 0x2b96}, {0x2cf4, 0x2cf8}, {0x2d26, 0x2d26},
    {0x2d28, 0x2d2c}, {0x2d2e, 0x2d2f}, {0x2d68, 0x2d6e}, {0x2d71, 0x2d7e},
    {0x2d97, 0x2d9f}, {0x2da7, 0x2da7}, {0x2daf, 0x2daf}, {0x2db7, 0x2db7},
    {0x2dbf, 0x2dbf}, {0x2dc7, 0x2dc7}, {0x2dcf, 0x2dcf}, {0x2dd7, 0x2dd7},
    {0x2ddf, 0x2ddf}, {0x2e5e, 0x2e7f}, {0x2e9a, 0x2e9a}, {0x2ef4, 0x2eff},
    {0x2fd6, 0x2fef}, {0x2ffc, 0x3000}, {0x3040, 0x3040}, {0x3097, 0x3098},
    {0x3100, 0x3104}, {0x3130, 0x3130}, {0x318f, 0x318f}, {0x31e4, 0x31ef},
    {0x321f, 0x321f}, {0xa48d, 0xa48f}, {0xa4c7, 0xa4cf}, {0xa62c, 0xa63f},
    {0xa6f8, 0xa6ff}, {0xa7cb, 0xa7cf}, {0xa7d2, 0xa7d2}, {0xa7d4, 0xa7d4},
    {0xa7da, 0xa7f1}, {0xa82d, 0xa82f}, {0xa83a, 0xa83f}, {0xa878, 0xa87f},
    {0xa8c6, 0xa8cd}, {0xa8da, 0xa8df}, {0xa954, 0xa95e}, {0xa97d, 0xa97f},
    {0xa9ce, 0xa9ce}, {0xa9da, 0xa9dd}, {0xa9ff, 0xa9ff}, {0xaa37, 0xaa3f},
    {0xaa4e, 0xaa4f}, {0xaa5a, 0xaa5b}, {0xaac3, 0xaada}, {0xaaf7, 0xab00},
    {0xab07, 0xab08}, {0xab0f, 0xab10}, {0xab17, 0xab1f}, {0xab27, 0xab27},
    {0xab2f, 0xab2f}, {0xab6c, 0xab6f}, {0xabee, 0xabef}, {0xabfa, 0xabff},
    {0xd7a4, 0xd7af}, {0xd7c7, 0xd7ca}, {0xd7fc, 0xf8ff}, {0xfa6e, 0xfa6f},
    {0xfada, 0xfaff}, {0xfb07, 0xfb12}, {0xfb18, 0xfb1c}, {0xfb37, 0xfb37},
    {0xfb3d, 0xfb3d}, {0xfb3f, 0xfb3f}, {0xfb42, 0xfb42}, {0xfb45, 0xfb45},
    {0xfbc3, 0xfbd2}, {0xfd90, 0xfd91}, {0xfdc8, 0xfdce}, {0xfdd0, 0xfdef},
    {0xfe1a, 0xfe1f}, {0xfe53, 0xfe53}, {0xfe67, 0xfe67}, {0xfe6c, 0xfe6f},
    {0xfe75, 0xfe75}, {0xfefd, 0xff00}, {0xffbf, 0xffc1}, {0xffc8, 0xffc9},
    {0xffd0, 0xffd1}, {0xffd8, 0xffd9}, {0xffdd, 0xffdf}, {0xffe7, 0xffe7},
    {0xffef, 0xfffb}, {0xfffe, 0xffff}, {0x1000c, 0x1000c}, {0x10027, 0x10027},
    {0x1003b, 0x1003b}, {0x1003e, 0x1003e}, {0x1004e, 0x1004f}, {0x1005e, 0x1007f},
    {0x100fb, 0x100ff}, {0x10103, 0x10106}, {0x10134, 0x10136}, {0x1018f, 0x1018f},
    {0x1019d, 0x1019f}, {0x101a1, 0x101cf}, {0x101fe, 0x1027f}, {0x1029d, 0x1029f},
    {0x102d1, 0x102df}, {0x102fc, 0x102ff}, {0x10324, 0x1032c}, {0x1034b, 0x1034f},
    {0x1037b, 0x1037f}, {0x1039e, 0x1039e}, {0x103c4, 0x103c7}, {0x103d6, 0x103ff},
    {0x1049e, 0x1049f}, {0x104aa, 0x104af}, {0x104d4, 0x104d7}, {0x104fc, 0x104ff},
    {0x10528, 0x1052f}, {0x10564, 0x1056e}, {0x1057b, 0x1057b}, {0x1058b, 0x1058b},
    {0x10593, 0x10593}, {0x10596, 0x10596}, {0x105a2, 0x105a2}, {0x105b2, 0x105b2},
    {0x105ba, 0x105ba}, {0x105bd, 0x105ff}, {0x10737, 0x1073f}, {0x10756, 0x1075f},
    {0x10768, 0x1077f}, {0x10786, 0x10786}, {0x107b1, 0x107b1}, {0x107bb, 0x107ff},
    {0x10806, 0x10807}, {0x10809, 0x10809}, {0x10836, 0x10836}, {0x10839, 0x1083b},
    {0x1083d, 0x1083e}, {0x10856, 0x10856}, {0x1089f, 0x108a6}, {0x108b0, 0x108df},
    {0x108f3, 0x108f3}, {0x108f6, 0x108fa}, {0x1091c, 0x1091e}, {0x1093a, 0x1093e},
    {0x10940, 0x1097f}, {0x109b8, 0x109bb}, {0x109d0, 0x109d1}, {0x10a04, 0x10a04},
    {0x10a07, 0x10a0b}, {0x10a14, 0x10a14}, {0x10a18, 0x10a18}, {0x10a36, 0x10a37},
    {0x10a3b, 0x10a3e}, {0x10a49, 0x10a4f}, {0x10a59, 0x10a5f}, {0x10aa0, 0x10abf},
    {0x10ae7, 0x10aea}, {0x10af7, 0x10aff}, {0x10b36, 0x10b38}, {0x10b56, 0x10b57},
    {0x10b73, 0x10b77}, {0x10b92, 0x10b98}, {0x10b9d, 0x10ba8}, {0x10bb0, 0x10bff},
    {0x10c49, 0x10c7f}, {0x10cb3, 0x10cbf}, {0x10cf3, 0x10cf9}, {0x10d28, 0x10d2f},
    {0x10d3a, 0x10e5f}, {0x10e7f, 0x10e7f}, {0x10eaa, 0x10eaa}, {0x10eae, 0x10eaf},
    {0x10eb2, 0x10eff}, {0x10f28, 0x10f2f}, {0x10f5a, 0x10f6f}, {0x10f8a, 0x10faf},
    {0x10fcc, 0x10fdf}, {0x10ff7, 0x10fff}, {0x1104e, 0x11051}, {0x11076, 0x1107e},
    {0x110bd, 0x110bd}, {0x110c3, 0x110cf}, {0x110e9, 0x110ef}, {0x110fa, 0x110ff},
    {0x11135, 0x11135}, {0x11148, 0x1114f}, {0x11177, 0x1117f}, {0x111e0, 0x111e0},
    {0x111f5, 0x111ff}, {0x11212, 0x11212}, {0x1123f, 0x1127f}, {0x11287, 0x11287},
    {0x11289, 0x11289}, {0x1128e, 0x1128e}, {0x1129e, 0x1129e}, {0x112aa, 0x112af},
    {0x112eb, 0x112ef}, {0x112fa, 0x112ff}, {0x11304, 0x11304}, {0x1130d, 0x1130e},
    {0x11311, 0x11312}, {0x11329, 0x11329}, {0x11331, 0x11331}, {0x11334, 0x11334},
    {0x1133a, 0x1133a}, {0x11345, 0x11346}, {0x11349, 0x1134a}, {0x1134e, 0x1134f},
    {0x11351, 0x11356}, {0x11358, 0x1135c}, {0x11364, 0x11365}, {0x1136d, 0x1136f},
    {0x11375, 0x113ff}, {0x1145c, 0x1145c}, {0x11462, 0x1147f}, {0x114c8, 0x114cf},
    {0x114da, 0x1157f}, {0x115b6, 0x115b7}, {0x115de, 0x115ff}, {0x11645, 0x1164f},
    {0x1165a, 0x1165f}, {0x1166d, 0x1167f}, {0x116ba, 0x116bf}, {0x116ca, 0x116ff},
    {0x1171b, 0x1171c}, {0x1172c, 0x1172f}, {0x11747, 0x117ff}, {0x1183c, 0x1189f},
    {0x118f3, 0x118fe}, {0x11907, 0x11908}, {0x1190a, 0x1190b}, {0x11914, 0x11914},
    {0x11917, 0x11917}, {0x11936, 0x11936}, {0x11939, 0x1193a}, {0x11947, 0x1194f},
    {0x1195a, 0x1199f}, {0x119a8, 0x119a9}, {0x119d8, 0x119d9}, {0x119e5, 0x119ff},
    {0x11a48, 0x11a4f}, {0x11aa3, 0x11aaf}, {0x11af9, 0x11bff}, {0x11c09, 0x11c09},
    {0x11c37, 0x11c37}, {0x11c46, 0x11c4f}, {0x11c6d, 0x11c6f}, {0x11c90, 0x11c91},
    {0x11ca8, 0x11ca8}, {0x11cb7, 0x11cff}, {0x11d07, 0x11d07}, {0x11d0a, 0x11d0a},
    {0x11d37, 0x11d39}, {0x11d3b, 0x11d3b}, {0x11d3e, 0x11d3e}, {0x11d48, 0x11d4f},
    {0x11d5a, 0x11d5f}, {0x11d66, 0x11d66}, {0x11d69, 0x11d69}, {0x11d8f, 0x11d8f},
    {0x11d92, 0x11d92}, {0x11d99, 0x11d9f}, {0x11daa, 0x11edf}, {0x11ef9, 0x11faf},
    {0x11fb1, 0x11fbf}, {0x11ff2, 0x11ffe}, {0x1239a, 0x123ff}, {0x1246f, 0x1246f},
    {0x12475, 0x1247f}, {0x12544, 0x12f8f}, {0x12ff3, 0x12fff}, {0x1342f, 0x143ff},
    {0x14647, 0x167ff}, {0x16a39, 0x16a3f}, {0x16a5f, 0x16a5f}, {0x16a6a, 0x16a6d},
    {0x16abf, 0x16abf}, {0x16aca, 0x16acf}, {0x16aee, 0x16aef}, {0x16af6, 0x16aff},
    {0x16b46, 0x16b4f}, {0x16b5a, 0x16b5a}, {0x16b62, 0x16b62}, {0x16b78, 0x16b7c},
    {0x16b90, 0x16e3f}, {0x16e9b, 0x16eff}, {0x16f4b, 0x16f4e}, {0x16f88, 0x16f8e},
    {0x16fa0, 0x16fdf}, {0x16fe5, 0x16fef}, {0x16ff2, 0x16fff}, {0x187f8, 0x187ff},
    {0x18cd6, 0x18cff}, {0x18d09, 0x1afef}, {0x1aff4, 0x1aff4}, {0x1affc, 0x1affc},
    {0x1afff, 0x1afff}, {0x1b123, 0x1b14f}, {0x1b153, 0x1b163}, {0x1b168, 0x1b16f},
    {0x1b2fc, 0x1bbff}, {0x1bc6b, 0x1bc6f}, {0x1bc7d, 0x1bc7f}, {0x1bc89, 0x1bc8f},
    {0x1bc9a, 0x1bc9b}, {0x1bca0, 0x1ceff}, {0x1cf2e, 0x1cf2f}, {0x1cf47, 0x1cf4f},
    {0x1cfc4, 0x1cfff}, {0x1d0f6, 0x1d0ff}, {0x1d127, 0x1d128}, {0x1d173, 0x1d17a},
    {0x1d1eb, 0x1d1ff}, {0x1d246, 0x1d2df}, {0x1d2f4, 0x1d2ff}, {0x1d357, 0x1d35f},
    {0x1d379, 0x1d3ff}, {0x1d455, 0x1d455}, {0x1d49d, 0x1d49d}, {0x1d4a0, 0x1d4a1},
    {0x1d4a3, 0x1d4a4}, {0x1d4a7, 0x1d4a8}, {0x1d4ad, 0x1d4ad}, {0x1d4ba, 0x1d4ba},
    {0x1d4bc, 0x1d4bc}, {0x1d4c4, 0x1d4c4}, {0x1d506, 0x1d506}, {0x1d50b, 0x1d50c},
    {0x1d515, 0x1d515}, {0x1d51d, 0x1d51d}, {0x1d53a, 0x1d53a}, {0x1d53f, 0x1d53f},
    {0x1d545, 0x1d545}, {0x1d547, 0x1d549}, {0x1d551, 0x1d551}, {0x1d6a6, 0x1d6a7},
    {0x1d7cc, 0x1d7cd}, {0x1da8c, 0x1da9a}, {0x1daa0, 0x1daa0}, {0x1dab0, 0x1deff},
    {0x1df1f, 0x1dfff}, {0x1e007, 0x1e007}, {0x1e019, 0x1e01a}, {0x1e022, 0x1e022},
    {0x1e025, 0x1e025}, {0x1e02b, 0x1e0ff}, {0x1e12d, 0x1e12f}, {0x1e13e, 0x1e13f},
    {0x1e14a, 0x1e14d}, {0x1e150, 0x1e28f}, {0x1e2af, 0x1e2bf}, {0x1e2fa, 0x1e2fe},
    {0x1e300, 0x1e7df}, {0x1e7e7, 0x1e7e7}, {0x1e7ec, 0x1e7ec}, {0x1e7ef, 0x1e7ef},
    {0x1e7ff, 0x1e7ff}, {0x1e8c5, 0x1e8c6}, {0x1e8d7, 0x1e8ff}, {0x1e94c, 0x1e94f},
    {0x1e95a, 0x1e95d}, {0x1e960, 0x1ec70}, {0x1ecb5, 0x1ed00}, {0x1ed3e, 0x1edff},
    {0x1ee04, 0x1ee04}, {0x1ee20, 0x1ee20}, {0x1ee23, 0x1ee23}, {0x1ee25, 0x1ee26},
    {0x1ee28, 0x1ee28}, {0x1ee33, 0x1ee33}, {0x1ee38, 0x1ee38}, {0x1ee3a, 0x1ee3a},
    {0x1ee3c, 0x1ee41}, {0x1ee43, 0x1ee46}, {0x1ee48, 0x1ee48}, {0x1ee4a, 0x1ee4a},
    {0x1ee4c, 0x1ee4c}, {0x1ee50, 0x1ee50}, {0x1ee53, 0x1ee53}, {0x1ee55, 0x1ee56},
    {0x1ee58, 0x1ee58}, {0x1ee5a, 0x1ee5a}, {0x1ee5c, 0x1ee5c}, {0x1ee5e, 0x1ee5e},
    {0x1ee60, 0x1ee60}, {0x1ee63, 0x1ee63}, {0x1ee65, 0x1ee66}, {0x1ee6b, 0x1ee6b},
    {0x1ee73, 0x1ee73}, {0x1ee78, 0x1ee78}, {0x1ee7d, 0x1ee7d}, {0x1ee7f, 0x1ee7f},
    {0x1ee8a, 0x1ee8a}, {0x1ee9c, 0x1eea0}, {0x1eea4, 0x1eea4}, {0x1eeaa, 0x1eeaa},
    {0x1eebc, 0x1eeef}, {0x1eef2, 0x1efff}, {0x1f02c, 0x1f02f}, {0x1f094, 0x1f09f},
    {0x1f0af, 0x1f0b0}, {0x1f0c0, 0x1f0c0}, {0x1f0d0, 0x1f0d0}, {0x1f0f6, 0x1f0ff},
    {0x1f1ae, 0x1f1e5}, {0x1f203, 0x1f20f}, {0x1f23c, 0x1f23f}, {0x1f249, 0x1f24f},
    {0x1f252, 0x1f25f}, {0x1f266, 0x1f2ff}, {0x1f6d8, 0x1f6dc}, {0x1f6ed, 0x1f6ef},
    {0x1f6fd, 0x1f6ff}, {0x1f774, 0x1f77f}, {0x1f7d9, 0x1f7df}, {0x1f7ec, 0x1f7ef},
    {0x1f7f1, 0x1f7ff}, {0x1f80c, 0x1f80f}, {0x1f848, 0x1f84f}, {0x1f85a, 0x1f85f},
    {0x1f888, 0x1f88f}, {0x1f8ae, 0x1f8af}, {0x1f8b2, 0x1f8ff}, {0x1fa54, 0x1fa5f},
    {0x1fa6e, 0x1fa6f}, {0x1fa75, 0x1fa77}, {0x1fa7d, 0x1fa7f}, {0x1fa87, 0x1fa8f},
    {0x1faad, 0x1faaf}, {0x1fabb, 0x1fabf}, {0x1fac6, 0x1facf}, {0x1fada, 0x1fadf},
    {0x1fae8, 0x1faef}, {0x1faf7, 0x1faff}, {0x1fb93, 0x1fb93}, {0x1fbcb, 0x1fbef},
    {0x1fbfa, 0x1ffff}, {0x2a6e0, 0x2a6ff}, {0x2b739, 0x2b73f}, {0x2b81e, 0x2b81f},
    {0x2cea2, 0x2ceaf}, {0x2ebe1, 0x2f7ff}, {0x2fa1e, 0x2ffff}, {0x3134b, 0xe00ff},
    {0xe01f0, 0x10ffff},
};
static const uint32_t SPACES[] = {0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000};
static const uint32_t DIGIT_ZEROS[] = {
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6,
    0xb66, 0xbe6, 0xc66, 0xce6, 0xd66, 0xde6, 0xe50, 0xed0,
    0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80,
    0x1a90, 0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900,
    0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10, 0x104a0, 0x10d30, 0x11066,
    0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650, 0x116c0,
    0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0,
    0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0,
    0x1e950, 0x1fbf0,
};

static int cp_in_ranges(uint32_t cp, const uint32_t (*r)[2], size_t n) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid][0]) hi = mid;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

static int py_isprintable(uint32_t cp) {
    return !cp_in_ranges(cp, NONPRINTABLE, sizeof NONPRINTABLE / sizeof NONPRINTABLE[0]);
}

static int py_isspace(uint32_t cp) {
    for (size_t i = 0; i < sizeof SPACES / sizeof SPACES[0]; i++)
        if (SPACES[i] == cp) return 1;
    return 0;
}

static int py_decimal(uint32_t cp) {
    if (cp >= '0' && cp <= '9') return (int)(cp - '0');
    for (size_t i = 0; i < sizeof DIGIT_ZEROS / sizeof DIGIT_ZEROS[0]; i++)
        if (cp >= DIGIT_ZEROS[i] && cp < DIGIT_ZEROS[i] + 10) return (int)(cp - DIGIT_ZEROS[i]);
    return -1;
}

/* One code point as generalized UTF-8 (surrogates too, as Python's surrogatepass writes). */
static void put_cp(buf_t *b, uint32_t cp) {
    char s[4];
    if (cp < 0x80) { s[0] = (char)cp; buf_add(b, s, 1); }
    else if (cp < 0x800) {
        s[0] = (char)(0xC0 | (cp >> 6)); s[1] = (char)(0x80 | (cp & 0x3F)); buf_add(b, s, 2);
    } else if (cp < 0x10000) {
        s[0] = (char)(0xE0 | (cp >> 12)); s[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        s[2] = (char)(0x80 | (cp & 0x3F)); buf_add(b, s, 3);
    } else {
        s[0] = (char)(0xF0 | (cp >> 18)); s[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        s[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); s[3] = (char)(0x80 | (cp & 0x3F)); buf_add(b, s, 4);
    }
}

/* The next code point of a generalized-UTF-8 string (as put_cp writes it). */
static size_t next_cp(const unsigned char *s, size_t n, size_t i, uint32_t *cp) {
    unsigned char c = s[i];
    if (c < 0x80) { *cp = c; return i + 1; }
    if (c >= 0xC0 && c < 0xE0 && i + 1 < n) { *cp = ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F); return i + 2; }
    if (c >= 0xE0 && c < 0xF0 && i + 2 < n) {
        *cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
        return i + 3;
    }
    if (c >= 0xF0 && i + 3 < n) {
        *cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
              ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
        return i + 4;
    }
    *cp = 0xFFFD; /* never in a string this file built */
    return i + 1;
}

/* How many code points the first n bytes of a generalized-UTF-8 string hold. */
static size_t cp_count(const unsigned char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) k++;
    return k;
}

#define IS_CONT(c) (((c) & 0xC0) == 0x80)

/* One step of CPython's UTF-8 decoder at s[i] (Objects/stringlib/codecs.h): the length of a
 * valid character (*cp set), or 0 with *why and *errlen (the bytes the error covers). */
static size_t py_utf8_step(const unsigned char *s, size_t n, size_t i, uint32_t *cp,
                           const char **why, size_t *errlen) {
    unsigned char ch = s[i];
    size_t left = n - i;
    if (ch < 0x80) { *cp = ch; return 1; }
    if (ch < 0xE0) {
        if (ch < 0xC2) goto invalid_start;
        if (left < 2) goto end_of_data;
        if (!IS_CONT(s[i + 1])) goto cont1;
        *cp = ((uint32_t)(ch & 0x1F) << 6) | (s[i + 1] & 0x3F);
        return 2;
    }
    if (ch < 0xF0) {
        if (left < 3) {
            if (left < 2) goto end_of_data;
            unsigned char c2 = s[i + 1];
            if (!IS_CONT(c2) || (c2 < 0xA0 ? ch == 0xE0 : ch == 0xED)) goto cont1;
            goto end_of_data;
        }
        unsigned char c2 = s[i + 1], c3 = s[i + 2];
        if (!IS_CONT(c2)) goto cont1;
        if (ch == 0xE0) { if (c2 < 0xA0) goto cont1; }
        else if (ch == 0xED && c2 >= 0xA0) goto cont1;
        if (!IS_CONT(c3)) goto cont2;
        *cp = ((uint32_t)(ch & 0x0F) << 12) | ((uint32_t)(c2 & 0x3F) << 6) | (c3 & 0x3F);
        return 3;
    }
    if (ch < 0xF5) {
        if (left < 4) {
            if (left < 2) goto end_of_data;
            unsigned char c2 = s[i + 1];
            if (!IS_CONT(c2) || (c2 < 0x90 ? ch == 0xF0 : ch == 0xF4)) goto cont1;
            if (left < 3) goto end_of_data;
            if (!IS_CONT(s[i + 2])) goto cont2;
            goto end_of_data;
        }
        unsigned char c2 = s[i + 1], c3 = s[i + 2], c4 = s[i + 3];
        if (!IS_CONT(c2)) goto cont1;
        if (ch == 0xF0) { if (c2 < 0x90) goto cont1; }
        else if (ch == 0xF4 && c2 >= 0x90) goto cont1;
        if (!IS_CONT(c3)) goto cont2;
        if (!IS_CONT(c4)) goto cont3;
        *cp = ((uint32_t)(ch & 0x07) << 18) | ((uint32_t)(c2 & 0x3F) << 12) |
              ((uint32_t)(c3 & 0x3F) << 6) | (c4 & 0x3F);
        return 4;
    }
invalid_start:
    *why = "invalid start byte"; *errlen = 1; return 0;
end_of_data:
    *why = "unexpected end of data"; *errlen = left; return 0;
cont1:
    *why = "invalid continuation byte"; *errlen = 1; return 0;
cont2:
    *why = "invalid continuation byte"; *errlen = 2; return 0;
cont3:
    *why = "invalid continuation byte"; *errlen = 3; return 0;
}

/* Bytes as Python decodes argv and paths (UTF-8, surrogateescape), in generalized UTF-8. */
static void from_os(buf_t *out, const char *raw, size_t n) {
    const unsigned char *s = (const unsigned char *)raw;
    size_t i = 0;
    while (i < n) {
        uint32_t cp; const char *why; size_t errlen;
        size_t k = py_utf8_step(s, n, i, &cp, &why, &errlen);
        if (k) { put_cp(out, cp); i += k; continue; }
        for (size_t j = 0; j < errlen; j++) put_cp(out, 0xDC00u + s[i + j]);
        i += errlen;
    }
}

/* Back to bytes (surrogateescape): what exec and open are given. */
static void to_os(buf_t *out, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t j = next_cp(s, n, i, &cp);
        if (cp >= 0xDC80 && cp <= 0xDCFF) buf_putc(out, (char)(cp - 0xDC00));
        else buf_add(out, s + i, j - i);
        i = j;
    }
}


/* libm's ceil and trunc for the values here (no -lm: the build is one cc line) */
static double ceil_pos(double x) {
    if (x >= 9e15) return x;
    long long k = (long long)x;
    return (double)k + ((double)k < x);
}

static double trunc_d(double x) {
    if (x >= 9e15 || x <= -9e15) return x; /* already whole */
    return (double)(long long)x;
}

/* ------------------------------------------------------------------------------------ */
/* Python's reprs and number formats                                                      */

/* float.__repr__: the shortest text that reads back as the same double. */
static void fmt_float_repr(buf_t *b, double x) {
    if (isnan(x)) { buf_puts(b, "nan"); return; }
    if (isinf(x)) { buf_puts(b, x < 0 ? "-inf" : "inf"); return; }
    char tmp[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
        if (strtod(tmp, NULL) == x) break;
    }
    /* tmp: [-]d[.ddd]e[+-]xx */
    char digits[32];
    size_t nd = 0;
    const char *p = tmp;
    int neg = 0;
    if (*p == '-') { neg = 1; p++; }
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    int exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    int decpt = exp10 + 1;
    if (neg) buf_putc(b, '-');
    if (decpt <= -4 || decpt > 16) {
        buf_putc(b, digits[0]);
        if (nd > 1) { buf_putc(b, '.'); buf_add(b, digits + 1, nd - 1); }
        buf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    } else if (decpt <= 0) {
        buf_puts(b, "0.");
        for (int i = 0; i < -decpt; i++) buf_putc(b, '0');
        buf_add(b, digits, nd);
    } else if ((size_t)decpt >= nd) {
        buf_add(b, digits, nd);
        for (size_t i = nd; i < (size_t)decpt; i++) buf_putc(b, '0');
        buf_puts(b, ".0");
    } else {
        buf_add(b, digits, (size_t)decpt);
        buf_putc(b, '.');
        buf_add(b, digits + decpt, nd - (size_t)decpt);
    }
}

/* json's float: repr, and JavaScript's names where JSON has none. */
static void fmt_float_json(buf_t *b, double x) {
    if (isnan(x)) buf_puts(b, "NaN");
    else if (isinf(x)) buf_puts(b, x < 0 ? "-Infinity" : "Infinity");
    else fmt_float_repr(b, x);
}

/* repr() of a str held in generalized UTF-8. */
static void repr_str(buf_t *b, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    int has_sq = 0, has_dq = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'') has_sq = 1;
        if (s[i] == '"') has_dq = 1;
    }
    char quote = (has_sq && !has_dq) ? '"' : '\'';
    buf_putc(b, quote);
    size_t i = 0;
    while (i < n) {
        if (b->len > REPLY_CAP) { b->oom = 1; return; }
        uint32_t cp;
        size_t j = next_cp(s, n, i, &cp);
        if (cp == (uint32_t)quote || cp == '\\') { buf_putc(b, '\\'); buf_putc(b, (char)cp); }
        else if (cp == '\t') buf_puts(b, "\\t");
        else if (cp == '\n') buf_puts(b, "\\n");
        else if (cp == '\r') buf_puts(b, "\\r");
        else if (cp < 0x20 || cp == 0x7F) buf_printf(b, "\\x%02x", cp);
        else if (cp < 0x7F) buf_putc(b, (char)cp);
        else if (py_isprintable(cp)) buf_add(b, s + i, j - i);
        else if (cp <= 0xFF) buf_printf(b, "\\x%02x", cp);
        else if (cp <= 0xFFFF) buf_printf(b, "\\u%04x", cp);
        else buf_printf(b, "\\U%08x", cp);
        i = j;
    }
    buf_putc(b, quote);
}

/* json's encode_basestring_ascii of a generalized-UTF-8 str. */
static void json_str(buf_t *b, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    buf_putc(b, '"');
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t j = next_cp(s, n, i, &cp);
        i = j;
        switch (cp) {
        case '"': buf_puts(b, "\\\""); continue;
        case '\\': buf_puts(b, "\\\\"); continue;
        case '\n': buf_puts(b, "\\n"); continue;
        case '\r': buf_puts(b, "\\r"); continue;
        case '\t': buf_puts(b, "\\t"); continue;
        case '\b': buf_puts(b, "\\b"); continue;
        case '\f': buf_puts(b, "\\f"); continue;
        default: break;
        }
        if (cp >= 0x20 && cp < 0x7F) buf_putc(b, (char)cp);
        else if (cp < 0x10000) buf_printf(b, "\\u%04x", cp);
        else {
            uint32_t v = cp - 0x10000;
            buf_printf(b, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
        }
    }
    buf_putc(b, '"');
}

static void json_cstr(buf_t *b, const char *s) { json_str(b, s, strlen(s)); }

/* A str from OS bytes (argv, paths), as JSON. */
static void json_os(buf_t *b, const char *raw) {
    buf_t t = {0};
    from_os(&t, raw, strlen(raw));
    json_str(b, t.p ? t.p : "", t.len);
    buf_free(&t);
}

static void repr_os(buf_t *b, const char *raw) {
    buf_t t = {0};
    from_os(&t, raw, strlen(raw));
    repr_str(b, t.p ? t.p : "", t.len);
    buf_free(&t);
}

/* ------------------------------------------------------------------------------------ */
/* logging: host.py's _log                                                                */

static void hlog(const char *fmt, ...) {
    buf_t b = {0};
    char stamp[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    buf_printf(&b, "%s host[%d] ", stamp, (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    char small[1024];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof small) buf_add(&b, small, (size_t)n);
    else if (n >= 0 && buf_reserve(&b, (size_t)n) == 0) {
        va_start(ap, fmt);
        vsnprintf(b.p + b.len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        b.len += (size_t)n;
    }
    buf_putc(&b, '\n');
    if (!b.oom) {
        size_t off = 0;
        while (off < b.len) {
            ssize_t w = write(2, b.p + off, b.len - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            off += (size_t)w;
        }
    }
    buf_free(&b);
}

/* ------------------------------------------------------------------------------------ */
/* JSON in: lean.loads (json.loads) over a frame's payload                                */

/* lean._encoding: which codec json.detect_encoding picks for these bytes. */
static const char *detect_encoding(const unsigned char *b, size_t n) {
    if (n >= 4 && ((b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF) ||
                   (b[0] == 0xFF && b[1] == 0xFE && b[2] == 0 && b[3] == 0)))
        return "utf-32";
    if (n >= 2 && ((b[0] == 0xFE && b[1] == 0xFF) || (b[0] == 0xFF && b[1] == 0xFE))) return "utf-16";
    if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) return "utf-8-sig";
    if (n >= 4) {
        if (!b[0]) return b[1] ? "utf-16-be" : "utf-32-be";
        if (!b[1]) return (b[2] || b[3]) ? "utf-16-le" : "utf-32-le";
    } else if (n == 2) {
        if (!b[0]) return "utf-16-be";
        if (!b[1]) return "utf-16-le";
    }
    return "utf-8";
}

static void decode_error(buf_t *err, const char *codec, const unsigned char *b, size_t start,
                         size_t end, const char *why) {
    if (end - start == 1)
        buf_printf(err, "'%s' codec can't decode byte 0x%02x in position %zu: %s", codec, b[start],
                   start, why);
    else
        buf_printf(err, "'%s' codec can't decode bytes in position %zu-%zu: %s", codec, start,
                   end - 1, why);
}

/* UTF-8 with surrogatepass, as bytes.decode gives it; 0, or -1 with the message in err. */
static int decode_utf8_pass(const unsigned char *b, size_t n, buf_t *out, buf_t *err) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp; const char *why; size_t errlen;
        size_t k = py_utf8_step(b, n, i, &cp, &why, &errlen);
        if (k) { put_cp(out, cp); i += k; continue; }
        /* surrogatepass: three bytes of a surrogate's UTF-8 form */
        if (n - i >= 3 && (b[i] & 0xF0) == 0xE0 && IS_CONT(b[i + 1]) && IS_CONT(b[i + 2])) {
            uint32_t c = ((uint32_t)(b[i] & 0x0F) << 12) | ((uint32_t)(b[i + 1] & 0x3F) << 6) |
                         (b[i + 2] & 0x3F);
            if (c >= 0xD800 && c <= 0xDFFF) { put_cp(out, c); i += 3; continue; }
        }
        decode_error(err, "utf-8", b, i, i + errlen, why);
        return -1;
    }
    return 0;
}

/* UTF-16 with surrogatepass (codec "utf-16" reads its BOM). */
static int decode_utf16_pass(const unsigned char *b, size_t n, int big, int bom, buf_t *out,
                             buf_t *err) {
    size_t i = 0;
    if (bom && n >= 2) {
        if (b[0] == 0xFF && b[1] == 0xFE) { big = 0; i = 2; }
        else if (b[0] == 0xFE && b[1] == 0xFF) { big = 1; i = 2; }
    }
    const char *codec = big ? "utf-16-be" : "utf-16-le";
    while (i < n) {
        if (n - i < 2) { decode_error(err, codec, b, i, n, "truncated data"); return -1; }
        uint32_t u = big ? ((uint32_t)b[i] << 8 | b[i + 1]) : ((uint32_t)b[i + 1] << 8 | b[i]);
        if (u >= 0xD800 && u < 0xDC00 && n - i >= 4) {
            uint32_t u2 = big ? ((uint32_t)b[i + 2] << 8 | b[i + 3]) : ((uint32_t)b[i + 3] << 8 | b[i + 2]);
            if (u2 >= 0xDC00 && u2 <= 0xDFFF) {
                put_cp(out, 0x10000 + ((u - 0xD800) << 10) + (u2 - 0xDC00));
                i += 4;
                continue;
            }
        }
        put_cp(out, u); /* a lone surrogate passes */
        i += 2;
    }
    return 0;
}

/* UTF-32 with surrogatepass (codec "utf-32" reads its BOM). */
static int decode_utf32_pass(const unsigned char *b, size_t n, int big, int bom, buf_t *out,
                             buf_t *err) {
    size_t i = 0;
    if (bom && n >= 4) {
        if (b[0] == 0xFF && b[1] == 0xFE && b[2] == 0 && b[3] == 0) { big = 0; i = 4; }
        else if (b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF) { big = 1; i = 4; }
    }
    const char *codec = big ? "utf-32-be" : "utf-32-le";
    while (i < n) {
        if (n - i < 4) { decode_error(err, codec, b, i, n, "truncated data"); return -1; }
        uint32_t u = big ? ((uint32_t)b[i] << 24 | (uint32_t)b[i + 1] << 16 | (uint32_t)b[i + 2] << 8 | b[i + 3])
                         : ((uint32_t)b[i + 3] << 24 | (uint32_t)b[i + 2] << 16 | (uint32_t)b[i + 1] << 8 | b[i]);
        if (u > 0x10FFFF) {
            decode_error(err, codec, b, i, i + 4, "code point not in range(0x110000)");
            return -1;
        }
        put_cp(out, u);
        i += 4;
    }
    return 0;
}

enum { J_NONE, J_NULL, J_TRUE, J_FALSE, J_INT, J_FLOAT, J_STR, J_ARR, J_OBJ };

typedef struct {
    int type;
    size_t start, end; /* the value's text in the document */
} jval_t;

typedef struct {
    size_t key_off, key_len; /* the decoded key, in the parser's keys buffer */
    jval_t val;
} member_t;

typedef struct {
    const unsigned char *d;
    size_t n;
    /* the error: a message at a char position (json's), or a whole message */
    const char *msg;
    size_t pos;
    buf_t whole;
    int failed;
    /* every top-level member (the env file), or only the keys a request reads, each once */
    int keep_all;
    /* the top-level object's members, in order */
    member_t *mem;
    size_t nmem, capmem;
    buf_t keys;
} jparse_t;

#define JWS(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')

static int jp_fail(jparse_t *p, const char *msg, size_t pos) {
    p->failed = 1;
    p->msg = msg;
    p->pos = pos;
    return -1;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* _json's scanstring_unicode from just after the opening quote; out may be NULL. */
static int jp_string(jparse_t *p, size_t idx, size_t *next_out, buf_t *out) {
    const unsigned char *s = p->d;
    size_t len = p->n, begin = idx - 1, end = idx;
    for (;;) {
        size_t next;
        unsigned char c = 0;
        for (next = end; next < len; next++) {
            c = s[next];
            if (c == '"' || c == '\\') break;
            if (c <= 0x1f) return jp_fail(p, "Invalid control character at", next);
        }
        if (!(next < len && (c == '"' || c == '\\')))
            return jp_fail(p, "Unterminated string starting at", begin);
        if (out && next != end) buf_add(out, s + end, next - end);
        next++;
        if (c == '"') { end = next; break; }
        if (next == len) return jp_fail(p, "Unterminated string starting at", begin);
        c = s[next];
        uint32_t cp;
        if (c != 'u') {
            end = next + 1;
            switch (c) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            default: return jp_fail(p, "Invalid \\escape", end - 2);
            }
        } else {
            cp = 0;
            next++;
            end = next + 4;
            if (end >= len) return jp_fail(p, "Invalid \\uXXXX escape", next - 1);
            for (; next < end; next++) {
                int h = hexval(s[next]);
                if (h < 0) return jp_fail(p, "Invalid \\uXXXX escape", end - 5);
                cp = (cp << 4) | (uint32_t)h;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF && end + 6 < len && s[next++] == '\\' && s[next++] == 'u') {
                uint32_t c2 = 0;
                end += 6;
                for (; next < end; next++) {
                    int h = hexval(s[next]);
                    if (h < 0) return jp_fail(p, "Invalid \\uXXXX escape", end - 5);
                    c2 = (c2 << 4) | (uint32_t)h;
                }
                if (c2 >= 0xDC00 && c2 <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (c2 - 0xDC00);
                else end -= 6;
            }
        }
        if (out) put_cp(out, cp);
    }
    *next_out = end;
    return 0;
}

static int jp_value(jparse_t *p, size_t idx, int depth, size_t *next_out, jval_t *v);

static void digits_limit(jparse_t *p, size_t digits) {
    p->failed = 1;
    p->msg = NULL;
    buf_printf(&p->whole,
               "Exceeds the limit (%d digits) for integer string conversion: value has %zu "
               "digits; use sys.set_int_max_str_digits() to increase the limit",
               INT_MAX_STR_DIGITS, digits);
}

/* _json's _match_number_unicode. */
static int jp_number(jparse_t *p, size_t start, size_t *next_out, jval_t *v) {
    const unsigned char *s = p->d;
    size_t end_idx = p->n - 1, idx = start;
    int is_float = 0;
    if (s[idx] == '-') {
        idx++;
        if (idx > end_idx) return jp_fail(p, "Expecting value", start);
    }
    if (s[idx] >= '1' && s[idx] <= '9') {
        idx++;
        while (idx <= end_idx && s[idx] >= '0' && s[idx] <= '9') idx++;
    } else if (s[idx] == '0') {
        idx++;
    } else {
        return jp_fail(p, "Expecting value", start);
    }
    if (idx < end_idx && s[idx] == '.' && s[idx + 1] >= '0' && s[idx + 1] <= '9') {
        is_float = 1;
        idx += 2;
        while (idx <= end_idx && s[idx] >= '0' && s[idx] <= '9') idx++;
    }
    if (idx < end_idx && (s[idx] == 'e' || s[idx] == 'E')) {
        size_t e_start = idx;
        idx++;
        if (idx < end_idx && (s[idx] == '-' || s[idx] == '+')) idx++;
        while (idx <= end_idx && s[idx] >= '0' && s[idx] <= '9') idx++;
        if (s[idx - 1] >= '0' && s[idx - 1] <= '9') is_float = 1;
        else idx = e_start;
    }
    if (!is_float) {
        size_t digits = idx - start - (s[start] == '-');
        if (digits > INT_MAX_STR_DIGITS) { digits_limit(p, digits); return -1; }
    }
    v->type = is_float ? J_FLOAT : J_INT;
    v->start = start;
    v->end = idx;
    *next_out = idx;
    return 0;
}

static int jp_object(jparse_t *p, size_t idx, int depth, size_t *next_out) {
    const unsigned char *s = p->d;
    size_t end_idx = p->n - 1, next;
    int top = depth == 1;
    while (idx <= end_idx && JWS(s[idx])) idx++;
    if (idx > end_idx || s[idx] != '}') {
        for (;;) {
            if (idx > end_idx || s[idx] != '"')
                return jp_fail(p, "Expecting property name enclosed in double quotes", idx);
            size_t key_off = p->keys.len;
            if (jp_string(p, idx + 1, &next, top ? &p->keys : NULL) < 0) return -1;
            size_t key_len = p->keys.len - key_off;
            idx = next;
            while (idx <= end_idx && JWS(s[idx])) idx++;
            if (idx > end_idx || s[idx] != ':') return jp_fail(p, "Expecting ':' delimiter", idx);
            idx++;
            while (idx <= end_idx && JWS(s[idx])) idx++;
            jval_t v;
            if (jp_value(p, idx, depth, &next, &v) < 0) return -1;
            int store = top;
            if (top && !p->keep_all) {
                /* a request: only the keys requests read, the last of each (as a dict) */
                static const char *const wanted[] = {"op", "rows", "cols", "lines", "signal",
                                                     "grace", "text", "enter", "output", "every_ms"};
                const char *key = p->keys.p ? p->keys.p + key_off : "";
                int keep = 0;
                size_t same = p->nmem;
                for (size_t w = 0; w < sizeof wanted / sizeof wanted[0]; w++)
                    if (strlen(wanted[w]) == key_len && !memcmp(wanted[w], key, key_len)) keep = 1;
                for (same = 0; keep && same < p->nmem; same++)
                    if (p->mem[same].key_len == key_len &&
                        !memcmp(p->keys.p + p->mem[same].key_off, key, key_len))
                        break;
                if (keep && same < p->nmem) p->mem[same].val = v;
                if (!keep || same < p->nmem) {
                    p->keys.len = key_off;
                    store = 0;
                }
            }
            if (store) {
                if (p->nmem == p->capmem) {
                    size_t cap = p->capmem ? p->capmem * 2 : 8;
                    member_t *m = realloc(p->mem, cap * sizeof *m);
                    if (!m) return jp_fail(p, "out of memory", idx);
                    p->mem = m;
                    p->capmem = cap;
                }
                p->mem[p->nmem].key_off = key_off;
                p->mem[p->nmem].key_len = key_len;
                p->mem[p->nmem].val = v;
                p->nmem++;
            }
            idx = next;
            while (idx <= end_idx && JWS(s[idx])) idx++;
            if (idx <= end_idx && s[idx] == '}') break;
            if (idx > end_idx || s[idx] != ',') return jp_fail(p, "Expecting ',' delimiter", idx);
            idx++;
            while (idx <= end_idx && JWS(s[idx])) idx++;
        }
    }
    *next_out = idx + 1;
    return 0;
}

static int jp_array(jparse_t *p, size_t idx, int depth, size_t *next_out) {
    const unsigned char *s = p->d;
    size_t end_idx = p->n - 1, next;
    while (idx <= end_idx && JWS(s[idx])) idx++;
    if (idx > end_idx || s[idx] != ']') {
        for (;;) {
            jval_t v;
            if (jp_value(p, idx, depth, &next, &v) < 0) return -1;
            idx = next;
            while (idx <= end_idx && JWS(s[idx])) idx++;
            if (idx <= end_idx && s[idx] == ']') break;
            if (idx > end_idx || s[idx] != ',') return jp_fail(p, "Expecting ',' delimiter", idx);
            idx++;
            while (idx <= end_idx && JWS(s[idx])) idx++;
        }
    }
    *next_out = idx + 1;
    return 0;
}

static int lit(jparse_t *p, size_t idx, const char *word) {
    size_t k = strlen(word);
    return idx + k <= p->n && memcmp(p->d + idx, word, k) == 0 && idx + k - 1 < p->n;
}

/* _json's scan_once_unicode. */
static int jp_value(jparse_t *p, size_t idx, int depth, size_t *next_out, jval_t *v) {
    const unsigned char *s = p->d;
    if (idx >= p->n) return jp_fail(p, "Expecting value", idx);
    v->start = idx;
    switch (s[idx]) {
    case '"':
        v->type = J_STR;
        if (jp_string(p, idx + 1, next_out, NULL) < 0) return -1;
        v->end = *next_out;
        return 0;
    case '{':
    case '[':
        if (depth + 1 > MAX_DEPTH) {
            p->failed = 1;
            p->msg = NULL;
            buf_printf(&p->whole,
                       "maximum recursion depth exceeded while decoding a JSON %s from a unicode string",
                       s[idx] == '{' ? "object" : "array");
            return -1;
        }
        v->type = s[idx] == '{' ? J_OBJ : J_ARR;
        if ((s[idx] == '{' ? jp_object : jp_array)(p, idx + 1, depth + 1, next_out) < 0) return -1;
        v->end = *next_out;
        return 0;
    case 'n':
        if (lit(p, idx, "null")) { v->type = J_NULL; v->end = *next_out = idx + 4; return 0; }
        break;
    case 't':
        if (lit(p, idx, "true")) { v->type = J_TRUE; v->end = *next_out = idx + 4; return 0; }
        break;
    case 'f':
        if (lit(p, idx, "false")) { v->type = J_FALSE; v->end = *next_out = idx + 5; return 0; }
        break;
    case 'N':
        if (lit(p, idx, "NaN")) { v->type = J_FLOAT; v->end = *next_out = idx + 3; return 0; }
        break;
    case 'I':
        if (lit(p, idx, "Infinity")) { v->type = J_FLOAT; v->end = *next_out = idx + 8; return 0; }
        break;
    case '-':
        if (lit(p, idx, "-Infinity")) { v->type = J_FLOAT; v->end = *next_out = idx + 9; return 0; }
        break;
    }
    return jp_number(p, idx, next_out, v);
}

typedef struct {
    buf_t doc;       /* the payload decoded to generalized UTF-8 */
    jparse_t p;
    jval_t root;
} jdoc_t;

static void jdoc_free(jdoc_t *j) {
    buf_free(&j->doc);
    buf_free(&j->p.whole);
    buf_free(&j->p.keys);
    free(j->p.mem);
    memset(j, 0, sizeof *j);
}

/* lean.loads(payload); 0, or -1 with json's message in err (ValueError's text). */
static int json_loads(jdoc_t *j, const unsigned char *b, size_t n, int keep_all, buf_t *err) {
    memset(j, 0, sizeof *j);
    j->p.keep_all = keep_all;
    const char *enc = detect_encoding(b, n);
    int rc;
    if (!strcmp(enc, "utf-8")) rc = decode_utf8_pass(b, n, &j->doc, err);
    else if (!strcmp(enc, "utf-8-sig")) rc = decode_utf8_pass(b + 3, n - 3, &j->doc, err);
    else if (!strcmp(enc, "utf-16")) rc = decode_utf16_pass(b, n, 0, 1, &j->doc, err);
    else if (!strcmp(enc, "utf-16-be")) rc = decode_utf16_pass(b, n, 1, 0, &j->doc, err);
    else if (!strcmp(enc, "utf-16-le")) rc = decode_utf16_pass(b, n, 0, 0, &j->doc, err);
    else if (!strcmp(enc, "utf-32")) rc = decode_utf32_pass(b, n, 0, 1, &j->doc, err);
    else if (!strcmp(enc, "utf-32-be")) rc = decode_utf32_pass(b, n, 1, 0, &j->doc, err);
    else rc = decode_utf32_pass(b, n, 0, 0, &j->doc, err);
    if (rc < 0) return -1;
    if (j->doc.oom) { buf_puts(err, "out of memory"); return -1; }
    jparse_t *p = &j->p;
    p->d = (const unsigned char *)(j->doc.p ? j->doc.p : "");
    p->n = j->doc.len;
    size_t idx = 0, next;
    while (idx < p->n && JWS(p->d[idx])) idx++;
    if (jp_value(p, idx, 0, &next, &j->root) < 0) goto fail;
    idx = next;
    while (idx < p->n && JWS(p->d[idx])) idx++;
    if (idx != p->n) { jp_fail(p, "Extra data", idx); goto fail; }
    if (p->keys.oom) { buf_puts(err, "out of memory"); return -1; }
    return 0;
fail:
    if (p->msg == NULL) {
        buf_puts(err, buf_str(&p->whole));
        return -1;
    }
    /* json.JSONDecodeError's words: line and column from the char position */
    size_t line = 1, col_start = 0;
    for (size_t i = 0; i < p->pos && i < p->n; i++)
        if (p->d[i] == '\n') { line++; col_start = i + 1; }
    size_t pos = cp_count(p->d, p->pos);
    size_t column = pos - cp_count(p->d, col_start) + 1;
    buf_printf(err, "%s: line %zu column %zu (char %zu)", p->msg, line, column, pos);
    return -1;
}

/* ------------------------------------------------------------------------------------ */
/* what the requests read from a value                                                    */

static const char *type_name(int t) {
    switch (t) {
    case J_NULL: return "NoneType";
    case J_TRUE: case J_FALSE: return "bool";
    case J_INT: return "int";
    case J_FLOAT: return "float";
    case J_STR: return "str";
    case J_ARR: return "list";
    case J_OBJ: return "dict";
    }
    return "NoneType";
}

/* The value of a top-level key (the last one wins, as in a dict); type J_NONE if absent. */
static jval_t jget(jdoc_t *j, const char *key) {
    size_t k = strlen(key);
    for (size_t i = j->p.nmem; i-- > 0;) {
        member_t *m = &j->p.mem[i];
        if (m->key_len == k && memcmp(j->p.keys.p + m->key_off, key, k) == 0) return m->val;
    }
    jval_t none = {J_NONE, 0, 0};
    return none;
}

/* A JSON string value, decoded. */
static void jstr(jdoc_t *j, jval_t v, buf_t *out) {
    size_t next;
    jp_string(&j->p, v.start + 1, &next, out);
}

static double jfloat(jdoc_t *j, jval_t v) {
    const char *s = (const char *)j->p.d + v.start;
    size_t n = v.end - v.start;
    if (n == 3 && !memcmp(s, "NaN", 3)) return NAN;
    if (n == 8 && !memcmp(s, "Infinity", 8)) return INFINITY;
    if (n == 9 && !memcmp(s, "-Infinity", 9)) return -INFINITY;
    char tmp[512];
    if (n < sizeof tmp) {
        memcpy(tmp, s, n);
        tmp[n] = 0;
        return strtod(tmp, NULL);
    }
    char *big = malloc(n + 1);
    if (!big) return 0.0;
    memcpy(big, s, n);
    big[n] = 0;
    double d = strtod(big, NULL);
    free(big);
    return d;
}

/* Python's bool(value). */
static int jtruthy(jdoc_t *j, jval_t v) {
    const unsigned char *s = j->p.d;
    switch (v.type) {
    case J_NONE: case J_NULL: case J_FALSE: return 0;
    case J_TRUE: return 1;
    case J_INT:
        for (size_t i = v.start; i < v.end; i++)
            if (s[i] >= '1' && s[i] <= '9') return 1;
        return 0;
    case J_FLOAT: { double d = jfloat(j, v); return d != 0.0 || isnan(d); }
    case J_STR: return v.end - v.start > 2;
    case J_ARR: case J_OBJ:
        for (size_t i = v.start + 1; i < v.end - 1; i++)
            if (!JWS(s[i])) return 1;
        return 0;
    }
    return 0;
}

/* A Python int: small, or its decimal digits when it is past int64. */
typedef struct {
    int64_t v;
    int big;
    int neg;
    char text[INT_MAX_STR_DIGITS + 16];
} pyint_t;

static void pyint_text(buf_t *b, const pyint_t *x) {
    if (x->big) buf_puts(b, x->text);
    else buf_printf(b, "%lld", (long long)x->v);
}

/* From decimal digits (an optional '-' first, no other characters). */
static void pyint_from_digits(pyint_t *x, const char *s, size_t n) {
    memset(x, 0, offsetof(pyint_t, text));
    x->text[0] = 0;
    int neg = 0;
    if (n && *s == '-') { neg = 1; s++; n--; }
    while (n > 1 && *s == '0') { s++; n--; }
    int zero = n == 1 && *s == '0';
    x->neg = neg && !zero;
    if (n <= 18) {
        int64_t v = 0;
        for (size_t i = 0; i < n; i++) v = v * 10 + (s[i] - '0');
        x->v = x->neg ? -v : v;
        return;
    }
    x->big = 1;
    x->v = x->neg ? INT64_MIN : INT64_MAX;
    size_t k = 0;
    if (x->neg) x->text[k++] = '-';
    if (n > INT_MAX_STR_DIGITS) n = INT_MAX_STR_DIGITS;
    memcpy(x->text + k, s, n);
    x->text[k + n] = 0;
}

/* _PyUnicode_TransformDecimalAndSpaceToASCII: a number's text with Unicode digits and spaces
 * made ASCII (what int() and float() read); '?' ends it at the first other character. */
static void ascii_number(buf_t *a, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i = next_cp(s, n, i, &cp);
        if (cp < 127) buf_putc(a, (char)cp);
        else if (py_isspace(cp)) buf_putc(a, ' ');
        else {
            int d = py_decimal(cp);
            if (d < 0) { buf_putc(a, '?'); break; }
            buf_putc(a, (char)('0' + d));
        }
    }
}

/* int(str) as Python reads it (base 10); 0, or -1 with ValueError's text in err. */
static int pyint_from_str(pyint_t *x, const char *str, size_t n, buf_t *err) {
    buf_t a = {0};
    ascii_number(&a, str, n);
    const char *p = a.p ? a.p : "";
    size_t len = a.len, i = 0;
    int ok = 0;
    buf_t digits = {0};
#define PYSPACE(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\v' || (c) == '\f' || (c) == '\r')
    while (i < len && PYSPACE(p[i])) i++;
    if (i < len && (p[i] == '+' || p[i] == '-')) { if (p[i] == '-') buf_putc(&digits, '-'); i++; }
    size_t ndig = 0;
    int prev_digit = 0;
    while (i < len) {
        if (p[i] >= '0' && p[i] <= '9') { buf_putc(&digits, p[i]); ndig++; prev_digit = 1; i++; }
        else if (p[i] == '_' && prev_digit && i + 1 < len && p[i + 1] >= '0' && p[i + 1] <= '9') { prev_digit = 0; i++; }
        else break;
    }
    while (i < len && PYSPACE(p[i])) i++;
    ok = ndig > 0 && i == len && !a.oom && !digits.oom;
    if (ok && ndig > INT_MAX_STR_DIGITS) {
        buf_printf(err,
                   "Exceeds the limit (%d digits) for integer string conversion: value has %zu "
                   "digits; use sys.set_int_max_str_digits() to increase the limit",
                   INT_MAX_STR_DIGITS, ndig);
        buf_free(&a); buf_free(&digits);
        return -1;
    }
    if (ok) pyint_from_digits(x, digits.p, digits.len);
    else {
        buf_puts(err, "invalid literal for int() with base 10: ");
        repr_str(err, str, n);
    }
    buf_free(&a);
    buf_free(&digits);
    return ok ? 0 : -1;
}

/* float(str) as Python reads it; 0, or -1 with ValueError's text in err. */
static int pyfloat_from_str(double *out, const char *str, size_t n, buf_t *err) {
    buf_t a = {0};
    ascii_number(&a, str, n);
    const char *p = a.p ? a.p : "";
    size_t len = a.len, i = 0, end = len;
    int ok = 0;
    while (i < len && PYSPACE(p[i])) i++;
    while (end > i && PYSPACE(p[end - 1])) end--;
    buf_t t = {0};
    size_t j = i;
    int neg = 0;
    if (j < end && (p[j] == '+' || p[j] == '-')) { neg = p[j] == '-'; j++; }
    size_t rest = end - j;
    if (rest && (rest == 3 || rest == 8) &&
        (!strncasecmp(p + j, "inf", rest) || !strncasecmp(p + j, "infinity", rest) || !strncasecmp(p + j, "nan", rest))) {
        if (!strncasecmp(p + j, "nan", rest)) *out = neg ? -NAN : NAN;
        else *out = neg ? -INFINITY : INFINITY;
        ok = 1;
    } else {
        /* digits [. digits] | . digits, then [e [sign] digits]; '_' only between digits */
        size_t k = j, intd = 0, fracd = 0;
        int good = 1;
#define DIG(c) ((c) >= '0' && (c) <= '9')
#define RUN(count)                                                                   \
        while (k < end && (DIG(p[k]) || (p[k] == '_' && k > j && DIG(p[k - 1]) && k + 1 < end && DIG(p[k + 1])))) { \
            if (p[k] != '_') { buf_putc(&t, p[k]); count++; }                        \
            k++;                                                                     \
        }
        if (neg) buf_putc(&t, '-');
        RUN(intd);
        if (k < end && p[k] == '.') { buf_putc(&t, '.'); k++; size_t fs = k; (void)fs; RUN(fracd); }
        if (intd + fracd == 0) good = 0;
        if (good && k < end && (p[k] == 'e' || p[k] == 'E')) {
            buf_putc(&t, 'e');
            k++;
            if (k < end && (p[k] == '+' || p[k] == '-')) buf_putc(&t, p[k++]);
            size_t ed = 0;
            RUN(ed);
            if (!ed) good = 0;
        }
        if (good && k == end && !t.oom) {
            *out = strtod(t.p, NULL);
            ok = 1;
        }
#undef RUN
#undef DIG
    }
    if (!ok) {
        buf_puts(err, "could not convert string to float: ");
        repr_str(err, str, n);
    }
    buf_free(&a);
    buf_free(&t);
    return ok ? 0 : -1;
}

/* requests._whole: int(value) for an int, a float or a numeral; else TypeError's text. */
static int jwhole(jdoc_t *j, jval_t v, const char *what, pyint_t *x, buf_t *err) {
    switch (v.type) {
    case J_TRUE: case J_FALSE:
        pyint_from_digits(x, v.type == J_TRUE ? "1" : "0", 1);
        return 0;
    case J_INT:
        pyint_from_digits(x, (const char *)j->p.d + v.start, v.end - v.start);
        return 0;
    case J_FLOAT: {
        double d = jfloat(j, v);
        if (isnan(d)) { buf_puts(err, "cannot convert float NaN to integer"); return -1; }
        if (isinf(d)) { buf_puts(err, "cannot convert float infinity to integer"); return -1; }
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%.0f", trunc_d(d));
        pyint_from_digits(x, tmp, strlen(tmp));
        return 0;
    }
    case J_STR: {
        buf_t s = {0};
        jstr(j, v, &s);
        int rc = pyint_from_str(x, s.p ? s.p : "", s.len, err);
        buf_free(&s);
        return rc;
    }
    }
    buf_printf(err, "'%s' must be a number, not %s", what, type_name(v.type == J_NONE ? J_NULL : v.type));
    return -1;
}

/* requests._real: float(value). */
static int jreal(jdoc_t *j, jval_t v, const char *what, double *out, buf_t *err) {
    switch (v.type) {
    case J_TRUE: *out = 1.0; return 0;
    case J_FALSE: *out = 0.0; return 0;
    case J_FLOAT: *out = jfloat(j, v); return 0;
    case J_INT: {
        *out = jfloat(j, v);
        if (isinf(*out)) { buf_puts(err, "int too large to convert to float"); return -1; }
        return 0;
    }
    case J_STR: {
        buf_t s = {0};
        jstr(j, v, &s);
        int rc = pyfloat_from_str(out, s.p ? s.p : "", s.len, err);
        buf_free(&s);
        return rc;
    }
    }
    buf_printf(err, "'%s' must be a number, not %s", what, type_name(v.type == J_NONE ? J_NULL : v.type));
    return -1;
}

/* repr() of a parsed JSON value (a dict keeps each key's first place and last value).
 * Containers are found in one pass first (their ends), so a deep value is not read again at
 * every level: the work stays near linear whatever a hostile peer nests. */
typedef struct {
    uint32_t start, end;
} span_t;

typedef struct {
    size_t key_off, key_len, first, val;
} rmember_t;

typedef struct {
    jdoc_t *j;
    span_t *spans;
    size_t nspans;
} repr_t;

static buf_t *sort_keys_buf;
static rmember_t *sort_members;

static int cmp_members(const void *a, const void *b) {
    size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
    rmember_t *x = &sort_members[ia], *y = &sort_members[ib];
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(sort_keys_buf->p + x->key_off, sort_keys_buf->p + y->key_off, n);
    if (c) return c;
    if (x->key_len != y->key_len) return x->key_len < y->key_len ? -1 : 1;
    return ia < ib ? -1 : (ia > ib);
}

static int cmp_first(const void *a, const void *b) {
    const rmember_t *x = a, *y = b;
    return x->first < y->first ? -1 : (x->first > y->first);
}

/* Where the value starting at idx ends. */
static size_t skip_value(repr_t *r, size_t idx) {
    const unsigned char *s = r->j->p.d;
    size_t next = idx + 1;
    if (s[idx] == '{' || s[idx] == '[') {
        size_t lo = 0, hi = r->nspans;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (r->spans[mid].start < idx) lo = mid + 1;
            else hi = mid;
        }
        return lo < r->nspans && r->spans[lo].start == idx ? r->spans[lo].end : r->j->p.n;
    }
    jval_t v;
    if (s[idx] == '"') jp_string(&r->j->p, idx + 1, &next, NULL);
    else jp_value(&r->j->p, idx, 0, &next, &v);
    return next;
}

static void repr_at(repr_t *r, size_t idx, buf_t *out) {
    jdoc_t *j = r->j;
    const unsigned char *s = j->p.d;
    size_t next;
    if (out->oom) return;
    if (out->len > REPLY_CAP) { out->oom = 1; return; }
    if (s[idx] == '[') {
        buf_putc(out, '[');
        idx++;
        while (JWS(s[idx])) idx++;
        int first = 1;
        while (s[idx] != ']' && !out->oom) {
            if (!first) buf_puts(out, ", ");
            first = 0;
            repr_at(r, idx, out);
            idx = skip_value(r, idx);
            while (JWS(s[idx])) idx++;
            if (s[idx] == ',') idx++;
            while (JWS(s[idx])) idx++;
        }
        buf_putc(out, ']');
        return;
    }
    if (s[idx] == '{') {
        buf_t keys = {0};
        rmember_t *m = NULL;
        size_t nm = 0, cap = 0;
        idx++;
        while (JWS(s[idx])) idx++;
        while (s[idx] != '}') {
            size_t off = keys.len;
            jp_string(&j->p, idx + 1, &next, &keys);
            idx = next;
            while (JWS(s[idx])) idx++;
            idx++; /* ':' */
            while (JWS(s[idx])) idx++;
            if (nm == cap) {
                cap = cap ? cap * 2 : 8;
                rmember_t *g = realloc(m, cap * sizeof *m);
                if (!g) { out->oom = 1; free(m); buf_free(&keys); return; }
                m = g;
            }
            m[nm].key_off = off;
            m[nm].key_len = keys.len - off;
            m[nm].first = nm;
            m[nm].val = idx;
            nm++;
            idx = skip_value(r, idx);
            while (JWS(s[idx])) idx++;
            if (s[idx] == ',') idx++;
            while (JWS(s[idx])) idx++;
        }
        size_t *order = nm ? malloc(nm * sizeof *order) : NULL;
        rmember_t *uniq = nm ? malloc(nm * sizeof *uniq) : NULL;
        if (keys.oom || (nm && (!order || !uniq))) {
            out->oom = 1; free(order); free(uniq); free(m); buf_free(&keys); return;
        }
        for (size_t i = 0; i < nm; i++) order[i] = i;
        sort_keys_buf = &keys;
        sort_members = m;
        if (nm) qsort(order, nm, sizeof *order, cmp_members);
        size_t nu = 0;
        for (size_t i = 0; i < nm;) {
            size_t k = i;
            while (k + 1 < nm && m[order[k + 1]].key_len == m[order[i]].key_len &&
                   !memcmp(keys.p + m[order[k + 1]].key_off, keys.p + m[order[i]].key_off, m[order[i]].key_len))
                k++;
            uniq[nu] = m[order[i]];
            uniq[nu].val = m[order[k]].val;
            nu++;
            i = k + 1;
        }
        if (nu) qsort(uniq, nu, sizeof *uniq, cmp_first);
        buf_putc(out, '{');
        for (size_t i = 0; i < nu && !out->oom; i++) {
            if (i) buf_puts(out, ", ");
            repr_str(out, keys.p + uniq[i].key_off, uniq[i].key_len);
            buf_puts(out, ": ");
            repr_at(r, uniq[i].val, out);
        }
        buf_putc(out, '}');
        free(order);
        free(uniq);
        free(m);
        buf_free(&keys);
        return;
    }
    if (s[idx] == '"') {
        buf_t t = {0};
        jp_string(&j->p, idx + 1, &next, &t);
        repr_str(out, t.p ? t.p : "", t.len);
        buf_free(&t);
        return;
    }
    jval_t v;
    if (jp_value(&j->p, idx, 0, &next, &v) < 0) return;
    switch (v.type) {
    case J_NULL: buf_puts(out, "None"); return;
    case J_TRUE: buf_puts(out, "True"); return;
    case J_FALSE: buf_puts(out, "False"); return;
    case J_FLOAT: fmt_float_repr(out, jfloat(j, v)); return;
    case J_INT:
        if (v.end - v.start == 2 && s[v.start] == '-' && s[v.start + 1] == '0') buf_putc(out, '0');
        else buf_add(out, s + v.start, v.end - v.start);
        return;
    }
}

/* More containers than this make a repr past REPLY_CAP ("[], " each): not worth building. */
#define REPR_MAX_CONTAINERS (REPLY_CAP / 2 + 1)

static void jrepr(jdoc_t *j, jval_t v, buf_t *out) {
    if (v.type == J_NONE) { buf_puts(out, "None"); return; }
    repr_t r = {j, NULL, 0};
    if (v.type == J_ARR || v.type == J_OBJ) {
        const unsigned char *s = j->p.d;
        size_t cap = 0, *stack = malloc((MAX_DEPTH + 2) * sizeof *stack), depth = 0;
        if (!stack) { out->oom = 1; return; }
        for (size_t i = v.start; i < v.end; i++) {
            unsigned char c = s[i];
            if (c == '"') {
                for (i++; i < v.end && s[i] != '"'; i++)
                    if (s[i] == '\\') i++;
            } else if (c == '[' || c == '{') {
                if (r.nspans == cap) {
                    if (r.nspans >= REPR_MAX_CONTAINERS) { out->oom = 1; break; }
                    cap = cap ? cap * 2 : 64;
                    span_t *g = realloc(r.spans, cap * sizeof *g);
                    if (!g) { out->oom = 1; break; }
                    r.spans = g;
                }
                r.spans[r.nspans].start = (uint32_t)i;
                r.spans[r.nspans].end = (uint32_t)v.end;
                if (depth < MAX_DEPTH + 2) stack[depth++] = r.nspans;
                r.nspans++;
            } else if ((c == ']' || c == '}') && depth) {
                r.spans[stack[--depth]].end = (uint32_t)(i + 1);
            }
        }
        free(stack);
    }
    if (!out->oom) repr_at(&r, v.start, out);
    free(r.spans);
}

/* ------------------------------------------------------------------------------------ */
/* JSON out: lean.dumps with json.dumps's three layouts the host uses                     */

typedef struct {
    buf_t *b;
    int indent;           /* -1: none */
    const char *isep, *ksep;
    int level;
    int count[16];
} jw_t;

enum { LAYOUT_FILE, LAYOUT_WIRE, LAYOUT_DEFAULT };

static jw_t jw_make(buf_t *b, int layout) {
    jw_t w;
    memset(&w, 0, sizeof w);
    w.b = b;
    w.indent = layout == LAYOUT_FILE ? 1 : -1;
    w.isep = layout == LAYOUT_DEFAULT ? ", " : ",";
    w.ksep = layout == LAYOUT_WIRE ? ":" : ": ";
    return w;
}

static void jw_newline(jw_t *w) {
    if (w->indent < 0) return;
    buf_putc(w->b, '\n');
    for (int i = 0; i < w->indent * w->level; i++) buf_putc(w->b, ' ');
}

static void jw_item(jw_t *w) {
    if (w->count[w->level]++) buf_puts(w->b, w->isep);
    jw_newline(w);
}

static void jw_key(jw_t *w, const char *key) {
    jw_item(w);
    json_cstr(w->b, key);
    buf_puts(w->b, w->ksep);
}

static void jw_open(jw_t *w, char c) {
    buf_putc(w->b, c);
    if (w->level < 15) w->level++;
    w->count[w->level] = 0;
}

static void jw_close(jw_t *w, char c) {
    int n = w->count[w->level];
    if (w->level > 0) w->level--;
    if (n) jw_newline(w);
    buf_putc(w->b, c);
}

/* ------------------------------------------------------------------------------------ */
/* the ring of recent output (ring.py)                                                    */

static struct {
    unsigned char *buf;
    size_t pos, filled;
} ring;

static void ring_write(const unsigned char *data, size_t n) {
    size_t cap = SCROLLBACK_BYTES;
    if (!ring.buf) {
        ring.buf = malloc(cap); /* a fresh mapping: pages are touched only as output comes */
        if (!ring.buf) return;
    }
    if (n > cap) { data += n - cap; n = cap; }
    size_t first = n < cap - ring.pos ? n : cap - ring.pos;
    memcpy(ring.buf + ring.pos, data, first);
    if (n > first) memcpy(ring.buf, data + first, n - first);
    ring.pos = (ring.pos + n) % cap;
    ring.filled = ring.filled + n < cap ? ring.filled + n : cap;
}

static void ring_tail(buf_t *out, size_t count) {
    if (count > ring.filled) count = ring.filled;
    if (!count) return;
    if (ring.pos >= count) { buf_add(out, ring.buf + ring.pos - count, count); return; }
    size_t older = count - ring.pos;
    buf_add(out, ring.buf + SCROLLBACK_BYTES - older, older);
    buf_add(out, ring.buf, ring.pos);
}

/* ------------------------------------------------------------------------------------ */
/* the screen: screen.py's render over code points                                        */

typedef struct {
    uint32_t *v;
    size_t n, cap;
    int oom;
} cps_t;

static void cps_push(cps_t *c, uint32_t x) {
    if (c->oom) return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        uint32_t *v = realloc(c->v, cap * sizeof *v);
        if (!v) { c->oom = 1; return; }
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = x;
}

/* bytes.decode("utf-8", errors="replace") */
static void decode_replace(const unsigned char *s, size_t n, cps_t *out) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp; const char *why; size_t errlen;
        size_t k = py_utf8_step(s, n, i, &cp, &why, &errlen);
        if (k) { cps_push(out, cp); i += k; }
        else { cps_push(out, 0xFFFD); i += errlen; }
    }
}

static int in_str(uint32_t c, const char *set) {
    for (; *set; set++)
        if ((unsigned char)*set == c) return 1;
    return 0;
}

/* screen.strip_escapes */
static void strip_escapes(const cps_t *t, cps_t *out) {
    size_t i = 0, n = t->n;
    const uint32_t *s = t->v;
    while (i < n) {
        if (s[i] != 0x1b) { cps_push(out, s[i]); i++; continue; }
        i++;
        if (i >= n) break;
        uint32_t kind = s[i];
        if (kind == '[') {
            i++;
            while (i < n && !(s[i] >= '@' && s[i] <= '~')) i++;
            i++;
        } else if (in_str(kind, "]PX^_")) {
            i++;
            while (i < n && s[i] != 0x07 && s[i] != 0x1b) i++;
            if (i + 1 < n && s[i] == 0x1b && s[i + 1] == '\\') i += 2;
            else if (i < n && s[i] == 0x07) i++;
        } else if (in_str(kind, "()*+")) {
            i += 2;
        } else {
            i++;
        }
    }
}

static int is_control(uint32_t c) {
    return c <= 0x07 || c == 0x0B || c == 0x0C || (c >= 0x0E && c <= 0x1F) || c == 0x7F;
}

/* screen._line */
static void one_line(const cps_t *raw, cps_t *out) {
    cps_t text = {0};
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < raw->n && raw->v[j] != '\r') j++;
        size_t plen = j - i;
        /* text = part + text[len(part):] */
        for (size_t k = 0; k < plen; k++) {
            if (k < text.n) text.v[k] = raw->v[i + k];
            else cps_push(&text, raw->v[i + k]);
        }
        if (j >= raw->n) break;
        i = j + 1;
    }
    cps_t kept = {0};
    for (size_t k = 0; k < text.n; k++) {
        if (text.v[k] == '\b') { if (kept.n) kept.n--; }
        else cps_push(&kept, text.v[k]);
    }
    for (size_t k = 0; k < kept.n; k++)
        if (!is_control(kept.v[k])) cps_push(out, kept.v[k]);
    while (out->n && py_isspace(out->v[out->n - 1])) out->n--;
    if (text.oom || kept.oom) out->oom = 1;
    free(text.v);
    free(kept.v);
}

/* screen.render: the last `lines` lines of raw output as plain text, in generalized UTF-8. */
static void render(const unsigned char *raw, size_t len, int64_t lines, int cut, buf_t *out) {
    cps_t *got = NULL;
    size_t ngot = 0, capgot = 0;
    size_t end = len;
    while (end > 0 && (int64_t)ngot < lines) {
        size_t start = end;
        while (start > 0 && raw[start - 1] != '\n') start--;
        if (start == 0 && cut) break;
        cps_t dec = {0}, plain = {0}, line = {0};
        decode_replace(raw + start, end - start, &dec);
        strip_escapes(&dec, &plain);
        one_line(&plain, &line);
        free(dec.v);
        free(plain.v);
        if (line.n || ngot) {
            if (ngot == capgot) {
                capgot = capgot ? capgot * 2 : 16;
                cps_t *g = realloc(got, capgot * sizeof *g);
                if (!g) { free(line.v); out->oom = 1; break; }
                got = g;
            }
            got[ngot++] = line;
        } else {
            free(line.v);
        }
        if (start == 0) break;
        end = start - 1;
    }
    for (size_t k = ngot; k-- > 0;) {
        for (size_t i = 0; i < got[k].n; i++) put_cp(out, got[k].v[i]);
        if (got[k].oom) out->oom = 1;
        if (k) buf_putc(out, '\n');
        free(got[k].v);
    }
    free(got);
}

/* ------------------------------------------------------------------------------------ */
/* process facts (recordio.py, tree.py)                                                   */

static int read_file(const char *path, char *buf, size_t cap, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = 0;
    for (;;) {
        if (n + 1 >= cap) break;
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *len = n;
    return 0;
}

static int boot_time(double *out) {
    static char buf[65536];
    size_t n;
    if (read_file("/proc/stat", buf, sizeof buf, &n) < 0) return -1;
    char *p = buf;
    while (p && *p) {
        if (!strncmp(p, "btime", 5)) {
            char *e;
            double v = strtod(p + 5, &e);
            if (e == p + 5) return -1;
            *out = v;
            return 0;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return -1;
}

static int boot_id(char *out, size_t cap) {
    char buf[128];
    size_t n;
    if (read_file("/proc/sys/kernel/random/boot_id", buf, sizeof buf, &n) < 0) return -1;
    char *s = buf, *e = buf + n;
    while (s < e && isspace((unsigned char)*s)) s++;
    while (e > s && isspace((unsigned char)e[-1])) e--;
    if (e == s || (size_t)(e - s) >= cap) return -1;
    for (char *c = s; c < e; c++)
        if ((unsigned char)*c >= 0x80) *c = '?';
    memcpy(out, s, (size_t)(e - s));
    out[e - s] = 0;
    return 0;
}

/* /proc/<pid>/stat after the command name: fields[0] the state, [1] the parent, [19] the
 * start in clock ticks.  Returns how many fields were found (at most max). */
static int stat_fields(int pid, long long *fields, int max, char *state) {
    char path[64], buf[2048];
    size_t n;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (read_file(path, buf, sizeof buf, &n) < 0) return -1;
    char *close_paren = NULL;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == ')') close_paren = buf + i;
    if (!close_paren || close_paren + 2 > buf + n) return 0;
    char *p = close_paren + 2;
    int k = 0;
    while (*p && k < max) {
        while (*p == ' ' || *p == '\n') p++;
        if (!*p) break;
        if (k == 0 && state) *state = *p;
        fields[k++] = strtoll(p, NULL, 10);
        while (*p && *p != ' ' && *p != '\n') p++;
    }
    return k;
}

static int start_ticks(int pid, long long *out) {
    long long f[20];
    int k = stat_fields(pid, f, 20, NULL);
    if (k < 20) return -1;
    *out = f[19];
    return 0;
}

static int start_time(int pid, double *out) {
    long long ticks;
    double booted;
    if (start_ticks(pid, &ticks) < 0 || boot_time(&booted) < 0) return -1;
    *out = (double)ticks / (double)sysconf(_SC_CLK_TCK) + booted;
    return 0;
}

/* recordio.signal_words: the names Python's _signal gives (the first in alphabetical order). */
static const char *SIGNAL_NAMES[] = {
    NULL, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
    "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGSTKFLT",
    "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU",
    "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR", "SIGSYS",
};

static void signal_words(int num, char *out, size_t cap) {
    if (num > 0 && num < (int)(sizeof SIGNAL_NAMES / sizeof SIGNAL_NAMES[0]) && SIGNAL_NAMES[num])
        snprintf(out, cap, "%s", SIGNAL_NAMES[num]);
    else if (num == SIGRTMIN) snprintf(out, cap, "SIGRTMIN");
    else if (num == SIGRTMAX) snprintf(out, cap, "SIGRTMAX");
    else if (num > SIGRTMIN && num < SIGRTMAX) snprintf(out, cap, "SIGRTMIN+%d", num - SIGRTMIN);
    else snprintf(out, cap, "signal %d", num);
}

/* getattr(_signal, name) for the names that are ints (requests._op_signal). */
static const struct {
    const char *name;
    int value;
} SIGNAL_ATTRS[] = {
    {"ITIMER_PROF", ITIMER_PROF}, {"ITIMER_REAL", ITIMER_REAL}, {"ITIMER_VIRTUAL", ITIMER_VIRTUAL},
    {"NSIG", NSIG}, {"SIGABRT", SIGABRT}, {"SIGALRM", SIGALRM}, {"SIGBUS", SIGBUS},
    {"SIGCHLD", SIGCHLD}, {"SIGCLD", SIGCHLD}, {"SIGCONT", SIGCONT}, {"SIGFPE", SIGFPE},
    {"SIGHUP", SIGHUP}, {"SIGILL", SIGILL}, {"SIGINT", SIGINT}, {"SIGIO", SIGIO},
    {"SIGIOT", SIGIOT}, {"SIGKILL", SIGKILL}, {"SIGPIPE", SIGPIPE}, {"SIGPOLL", SIGPOLL},
    {"SIGPROF", SIGPROF}, {"SIGPWR", SIGPWR}, {"SIGQUIT", SIGQUIT}, {"SIGRTMAX", 0},
    {"SIGRTMIN", 0}, {"SIGSEGV", SIGSEGV}, {"SIGSTKFLT", SIGSTKFLT}, {"SIGSTOP", SIGSTOP},
    {"SIGSYS", SIGSYS}, {"SIGTERM", SIGTERM}, {"SIGTRAP", SIGTRAP}, {"SIGTSTP", SIGTSTP},
    {"SIGTTIN", SIGTTIN}, {"SIGTTOU", SIGTTOU}, {"SIGURG", SIGURG}, {"SIGUSR1", SIGUSR1},
    {"SIGUSR2", SIGUSR2}, {"SIGVTALRM", SIGVTALRM}, {"SIGWINCH", SIGWINCH}, {"SIGXCPU", SIGXCPU},
    {"SIGXFSZ", SIGXFSZ}, {"SIG_BLOCK", SIG_BLOCK}, {"SIG_DFL", 0}, {"SIG_IGN", 1},
    {"SIG_SETMASK", SIG_SETMASK}, {"SIG_UNBLOCK", SIG_UNBLOCK},
};

static int signal_attr(const char *name, size_t len, int *out) {
    for (size_t i = 0; i < sizeof SIGNAL_ATTRS / sizeof SIGNAL_ATTRS[0]; i++) {
        if (strlen(SIGNAL_ATTRS[i].name) == len && !memcmp(SIGNAL_ATTRS[i].name, name, len)) {
            if (!strcmp(name, "SIGRTMIN")) *out = SIGRTMIN;
            else if (!strcmp(name, "SIGRTMAX")) *out = SIGRTMAX;
            else *out = SIGNAL_ATTRS[i].value;
            return 0;
        }
    }
    return -1;
}

/* tree.descendants([getpid()]): every descendant, parents first. */
typedef struct {
    int *v;
    size_t n, cap;
} ints_t;

static void ints_push(ints_t *a, int x) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        int *v = realloc(a->v, cap * sizeof *v);
        if (!v) return;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
}

static void descendants(int root, ints_t *found) {
    ints_t pids = {0}, parents = {0};
    DIR *d = opendir("/proc");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        if (!*nm) continue;
        int digits = 1;
        for (const char *c = nm; *c; c++)
            if (*c < '0' || *c > '9') digits = 0;
        if (!digits) continue;
        long long f[20];
        int pid = atoi(nm);
        if (stat_fields(pid, f, 20, NULL) < 20) continue;
        ints_push(&pids, pid);
        ints_push(&parents, (int)f[1]);
    }
    closedir(d);
    ints_t todo = {0};
    ints_push(&todo, root);
    while (todo.n) {
        int parent = todo.v[--todo.n];
        for (size_t i = 0; i < pids.n && i < parents.n; i++) {
            if (parents.v[i] != parent || pids.v[i] == root) continue;
            int seen = 0;
            for (size_t k = 0; k < found->n; k++)
                if (found->v[k] == pids.v[i]) { seen = 1; break; }
            if (seen) continue;
            ints_push(found, pids.v[i]);
            ints_push(&todo, pids.v[i]);
        }
    }
    free(pids.v);
    free(parents.v);
    free(todo.v);
}

static void signal_each(const ints_t *pids, int sig) {
    for (size_t i = 0; i < pids->n; i++) kill(pids->v[i], sig);
}

static void repr_ints(buf_t *b, const ints_t *a) {
    buf_putc(b, '[');
    for (size_t i = 0; i < a->n; i++) buf_printf(b, "%s%d", i ? ", " : "", a->v[i]);
    buf_putc(b, ']');
}

static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* time.time() as CPython computes it: nanoseconds, then / 1e9. */
static double wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return (double)ns / 1e9;
}

/* recordio.write_json_atomic */
static int write_json_atomic(const char *path, const char *text, size_t len, buf_t *err) {
    buf_t tmp = {0};
    buf_printf(&tmp, "%s.tmp%d", path, (int)getpid());
    int fd = open(tmp.p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        buf_printf(err, "[Errno %d] %s: ", errno, strerror(errno));
        repr_os(err, tmp.p);
        buf_free(&tmp);
        return -1;
    }
    size_t off = 0;
    int bad = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { bad = errno ? errno : EIO; break; }
        off += (size_t)w;
    }
    if (!bad && fsync(fd) < 0) bad = errno;
    close(fd);
    if (!bad && rename(tmp.p, path) < 0) bad = errno;
    if (bad) {
        buf_printf(err, "[Errno %d] %s", bad, strerror(bad));
        unlink(tmp.p);
        buf_free(&tmp);
        return -1;
    }
    buf_free(&tmp);
    /* the rename is durable once the folder is synced too */
    char *dir = strdup(path);
    if (dir) {
        char *slash = strrchr(dir, '/');
        const char *folder = ".";
        if (slash == dir) folder = "/";
        else if (slash) { *slash = 0; folder = dir; }
        int dfd = open(folder, O_RDONLY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* the host's state (host.py's Host)                                                      */

typedef struct client {
    int fd;
    unsigned long id;
    buf_t in;
    buf_t out;
    size_t out_off;
    int attached, watching, output;
    int events; /* what epoll watches: EPOLLIN, | EPOLLOUT while out is pending */
    /* Its output at most once every `every` seconds (0: as it comes; hold()). */
    double every, sent_at; /* sent_at: when output was last queued to it */
    buf_t held;            /* output not sent yet */
    int armed;             /* a timer will send what is held */
    struct client *next;
} client_t;

typedef struct {
    int has;
    int has_code;
    int code;
    int signal;
    char signal_name[32];
    double ended_at;
    int stop_requested;
    const char *host_signal;
} exit_t;

enum { T_KILLPG, T_END_LINGER, T_KILL_LEFTOVERS, T_SEND_FINISH, T_LISTEN, T_RELEASE };

typedef struct {
    double at;
    int kind;
    int sig;
    unsigned long cid;
    int enter;
} timer_t_;

typedef struct {
    unsigned long cid;
    buf_t data;
    int enter;
} send_t;

static struct {
    /* the command line */
    const char *agent, *record_path, *socket_path;
    char *cwd;
    char **argv;
    char **envp;
    int rows, cols;
    double linger;
    /* the record */
    int host_pid;
    int has_hct, has_hst, has_pct, has_pst, has_bt, has_bid;
    double hct, pct, bt, started_at;
    long long hst, pst;
    char bid[64];
    int program_pid;
    buf_t error;
    int has_error;
    exit_t exit;
    /* the program and its PTY */
    int pid, subreaper, master, master_events;
    int paste_mode;
    double stirred_at; /* keys or a size last sent to the program (STIRRED) */
    unsigned char paste_tail[8];
    size_t paste_tail_len;
    buf_t to_pty;
    size_t to_pty_off;
    /* serving */
    int ep, listener, sig_r, sig_w;
    client_t *clients;
    unsigned long next_id;
    int stop_requested;
    const char *host_signal;
    unsigned long *stop_waiters;
    size_t nwaiters, capwaiters;
    send_t *sends;
    size_t nsends, capsends;
    int send_busy;
    timer_t_ *timers;
    size_t ntimers, captimers;
    int done, linger_over, leftovers_on;
    double leftovers_until;
} H;

static const char *PASTE_ON = "\x1b[?2004h";
static const char *PASTE_OFF = "\x1b[?2004l";

static void emit_exit(jw_t *w) {
    exit_t *e = &H.exit;
    jw_open(w, '{');
    jw_key(w, "code");
    if (e->has_code) buf_printf(w->b, "%d", e->code); else buf_puts(w->b, "null");
    jw_key(w, "signal");
    if (!e->has_code) buf_printf(w->b, "%d", e->signal); else buf_puts(w->b, "null");
    jw_key(w, "signal_name");
    if (!e->has_code) json_cstr(w->b, e->signal_name); else buf_puts(w->b, "null");
    jw_key(w, "ended_at");
    fmt_float_json(w->b, e->ended_at);
    jw_key(w, "stop_requested");
    buf_puts(w->b, e->stop_requested ? "true" : "false");
    jw_key(w, "host_signal");
    if (e->host_signal) json_cstr(w->b, e->host_signal); else buf_puts(w->b, "null");
    jw_close(w, '}');
}

static void repr_exit(buf_t *b) {
    exit_t *e = &H.exit;
    buf_puts(b, "{'code': ");
    if (e->has_code) buf_printf(b, "%d", e->code); else buf_puts(b, "None");
    buf_puts(b, ", 'signal': ");
    if (!e->has_code) buf_printf(b, "%d", e->signal); else buf_puts(b, "None");
    buf_puts(b, ", 'signal_name': ");
    if (!e->has_code) repr_str(b, e->signal_name, strlen(e->signal_name)); else buf_puts(b, "None");
    buf_puts(b, ", 'ended_at': ");
    fmt_float_repr(b, e->ended_at);
    buf_printf(b, ", 'stop_requested': %s, 'host_signal': ", e->stop_requested ? "True" : "False");
    if (e->host_signal) repr_str(b, e->host_signal, strlen(e->host_signal)); else buf_puts(b, "None");
    buf_putc(b, '}');
}

static void opt_float(buf_t *b, int has, double v) {
    if (has) fmt_float_json(b, v); else buf_puts(b, "null");
}

static void opt_int(buf_t *b, int has, long long v) {
    if (has) buf_printf(b, "%lld", v); else buf_puts(b, "null");
}

/* The record (fields as records.HostRecord, in host.base_record's order). */
static void emit_record(jw_t *w) {
    buf_t *b = w->b;
    jw_open(w, '{');
    jw_key(w, "v"); buf_puts(b, "1");
    jw_key(w, "agent"); json_os(b, H.agent);
    jw_key(w, "host_pid"); buf_printf(b, "%d", H.host_pid);
    jw_key(w, "host_create_time"); opt_float(b, H.has_hct, H.hct);
    jw_key(w, "host_start_ticks"); opt_int(b, H.has_hst, H.hst);
    jw_key(w, "program_pid"); opt_int(b, H.program_pid > 0, H.program_pid);
    jw_key(w, "program_create_time"); opt_float(b, H.has_pct, H.pct);
    jw_key(w, "program_start_ticks"); opt_int(b, H.has_pst, H.pst);
    jw_key(w, "boot_time"); opt_float(b, H.has_bt, H.bt);
    jw_key(w, "boot_id");
    if (H.has_bid) json_cstr(b, H.bid); else buf_puts(b, "null");
    jw_key(w, "started_at"); fmt_float_json(b, H.started_at);
    jw_key(w, "argv");
    jw_open(w, '[');
    for (char **a = H.argv; *a; a++) {
        jw_item(w);
        json_os(b, *a);
    }
    jw_close(w, ']');
    jw_key(w, "cwd"); json_os(b, H.cwd);
    jw_key(w, "socket"); json_os(b, H.socket_path);
    jw_key(w, "exit");
    if (H.exit.has) emit_exit(w); else buf_puts(b, "null");
    jw_key(w, "error");
    if (H.has_error) json_str(b, buf_str(&H.error), H.error.len); else buf_puts(b, "null");
    jw_close(w, '}');
}

static void base_record(void) {
    H.host_pid = getpid();
    H.has_hct = start_time(H.host_pid, &H.hct) == 0;
    H.has_hst = start_ticks(H.host_pid, &H.hst) == 0;
    H.program_pid = 0;
    H.has_pct = H.has_pst = 0;
    H.has_bt = boot_time(&H.bt) == 0;
    H.has_bid = boot_id(H.bid, sizeof H.bid) == 0;
    H.started_at = wall_time();
    H.exit.has = 0;
    H.has_error = 0;
}

static void write_record(void) {
    buf_t b = {0}, err = {0};
    jw_t w = jw_make(&b, LAYOUT_FILE);
    emit_record(&w);
    if (!b.oom && write_json_atomic(H.record_path, b.p, b.len, &err) < 0) {
        buf_t r = {0};
        repr_os(&r, H.record_path);
        hlog("cannot write record %s: %s", H.record_path, buf_str(&err));
        buf_free(&r);
    }
    buf_free(&b);
    buf_free(&err);
}

/* ------------------------------------------------------------------------------------ */
/* the event loop's parts                                                                 */

static void later(double delay, int kind, int sig, unsigned long cid, int enter) {
    if (H.ntimers == H.captimers) {
        size_t cap = H.captimers ? H.captimers * 2 : 8;
        timer_t_ *t = realloc(H.timers, cap * sizeof *t);
        if (!t) return;
        H.timers = t;
        H.captimers = cap;
    }
    timer_t_ *t = &H.timers[H.ntimers++];
    t->at = monotonic() + delay;
    t->kind = kind;
    t->sig = sig;
    t->cid = cid;
    t->enter = enter;
}

static void ep_set(int fd, int events, int add) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = (uint32_t)events;
    ev.data.fd = fd;
    epoll_ctl(H.ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
}

static client_t *client_by_id(unsigned long id) {
    for (client_t *c = H.clients; c; c = c->next)
        if (c->id == id && c->fd >= 0) return c;
    return NULL;
}

static void drop(client_t *c) {
    if (c->fd >= 0) {
        epoll_ctl(H.ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    for (size_t i = 0; i < H.nwaiters;) {
        if (H.stop_waiters[i] == c->id) {
            memmove(H.stop_waiters + i, H.stop_waiters + i + 1, (H.nwaiters - i - 1) * sizeof *H.stop_waiters);
            H.nwaiters--;
            break; /* list.remove takes the first */
        } else {
            i++;
        }
    }
}

/* Free the clients dropped meanwhile (never while a loop may still hold them). */
static void reap_clients(void) {
    client_t **pp = &H.clients;
    while (*pp) {
        client_t *c = *pp;
        if (c->fd < 0) {
            *pp = c->next;
            buf_free(&c->in);
            buf_free(&c->out);
            buf_free(&c->held);
            free(c);
        } else {
            pp = &c->next;
        }
    }
}

static void flush(client_t *c) {
    while (c->fd >= 0 && c->out.len > c->out_off) {
        ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0) { drop(c); return; }
        c->out_off += (size_t)n;
    }
    if (c->fd < 0) return;
    if (c->out_off == c->out.len) {
        c->out.len = 0;
        c->out_off = 0;
        if (c->out.cap > 65536) buf_free(&c->out); /* a burst's buffer goes back */
    } else if (c->out_off > 65536 && c->out_off > c->out.len / 2) {
        memmove(c->out.p, c->out.p + c->out_off, c->out.len - c->out_off);
        c->out.len -= c->out_off;
        c->out_off = 0;
    }
    int want = EPOLLIN | (c->out.len > c->out_off ? EPOLLOUT : 0);
    if (want != c->events) {
        c->events = want;
        ep_set(c->fd, want, 0);
    }
}

static void frame_into(buf_t *b, char kind, const char *payload, size_t n);

static void queue(client_t *c, const char *data, size_t n) {
    if (!c || c->fd < 0) return;
    if (c->output) { /* what is held goes first (hold()) */
        if (c->held.len) {
            buf_t f = {0};
            frame_into(&f, 'O', c->held.p, c->held.len);
            buf_free(&c->held);
            if (f.oom) { hlog("dropped a client that stopped reading"); drop(c); return; }
            queue(c, f.p, f.len);
            buf_free(&f);
            if (c->fd < 0) return;
        }
        c->sent_at = monotonic();
    }
    if (n > CLIENT_BACKLOG_LIMIT || c->out.len - c->out_off + n > CLIENT_BACKLOG_LIMIT) {
        hlog("dropped a client that stopped reading");
        drop(c);
        return;
    }
    buf_add(&c->out, data, n);
    if (c->out.oom) {
        hlog("dropped a client that stopped reading");
        drop(c);
        return;
    }
    flush(c);
}

static void frame_into(buf_t *b, char kind, const char *payload, size_t n) {
    unsigned char h[HEADER_SIZE] = {(unsigned char)kind, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                    (unsigned char)(n >> 8), (unsigned char)n};
    buf_add(b, h, HEADER_SIZE);
    buf_add(b, payload, n);
}

/* Queue one JSON frame built in body (compact layout); a body too big drops the client. */
static void queue_json(client_t *c, buf_t *body) {
    if (!c || c->fd < 0) return;
    if (body->oom || body->len > CLIENT_BACKLOG_LIMIT) {
        hlog("dropped a client that stopped reading");
        drop(c);
        return;
    }
    buf_t f = {0};
    frame_into(&f, 'J', body->p, body->len);
    if (f.oom) { hlog("dropped a client that stopped reading"); drop(c); }
    else queue(c, f.p, f.len);
    buf_free(&f);
}

static void reply_ok(client_t *c) {
    buf_t b = {0};
    buf_puts(&b, "{\"ok\":true}");
    queue_json(c, &b);
    buf_free(&b);
}

static void reply_error(client_t *c, const char *msg, size_t len) {
    buf_t b = {0};
    buf_puts(&b, "{\"ok\":false,\"error\":");
    json_str(&b, msg, len);
    buf_putc(&b, '}');
    queue_json(c, &b);
    buf_free(&b);
}

static void exit_event(buf_t *b) {
    jw_t w = jw_make(b, LAYOUT_WIRE);
    jw_open(&w, '{');
    jw_key(&w, "event"); json_cstr(b, "exit");
    jw_key(&w, "exit"); emit_exit(&w);
    jw_close(&w, '}');
}

/* Best effort before closing: a second for the client to take what is queued. */
static void flush_blocking(client_t *c) {
    if (c->fd < 0 || c->out.len == c->out_off) return;
    double deadline = monotonic() + 1.0;
    while (c->out.len > c->out_off) {
        double left = deadline - monotonic();
        if (left <= 0) break;
        struct pollfd p = {c->fd, POLLOUT, 0};
        int r = poll(&p, 1, (int)ceil_pos(left * 1000));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) break;
        c->out_off += (size_t)n;
    }
    c->out.len = 0;
    c->out_off = 0;
}

static int killpg_program(int sig) {
    if (H.exit.has) return 0;
    if (killpg(H.pid, sig) == 0) return 1;
    if (errno == ESRCH) return kill(H.pid, sig) == 0; /* it may have left its own group */
    return 0; /* EPERM: the Python host died of it; here it is "not delivered" */
}

static void flush_pty(void) {
    while (H.to_pty.len > H.to_pty_off) {
        ssize_t n = write(H.master, H.to_pty.p + H.to_pty_off, H.to_pty.len - H.to_pty_off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0) { H.to_pty.len = H.to_pty_off = 0; break; }
        H.to_pty_off += (size_t)n;
    }
    if (H.to_pty_off == H.to_pty.len) {
        H.to_pty.len = H.to_pty_off = 0;
        if (H.to_pty.cap > 65536) buf_free(&H.to_pty);
    }
    if (H.master_events) {
        int want = EPOLLIN | (H.to_pty.len > H.to_pty_off ? EPOLLOUT : 0);
        if (want != H.master_events) {
            H.master_events = want;
            ep_set(H.master, want, 0);
        }
    }
}

static void write_pty(const char *data, size_t n) {
    if (H.exit.has || !n) return;
    H.stirred_at = monotonic();
    buf_add(&H.to_pty, data, n);
    flush_pty();
}

/* Host._hold: output to a client that takes it at most once every `every` seconds (the
   daemon's watch): at once after a quiet spell or STIRRED after keys or a size were sent to
   the program, else held and sent as one frame when the spell ends, from HOLD_LIMIT bytes, or
   before anything else queued to the client. */
static void hold(client_t *c, const unsigned char *data, size_t n, buf_t *frame) {
    double now = monotonic();
    if ((!c->held.len && now - c->sent_at >= c->every) || now - H.stirred_at < STIRRED) {
        queue(c, frame->p, frame->len);
        return;
    }
    buf_add(&c->held, data, n);
    if (c->held.oom) {
        hlog("dropped a client that stopped reading");
        drop(c);
    } else if (c->held.len >= HOLD_LIMIT) {
        queue(c, "", 0);
    } else if (!c->armed) {
        c->armed = 1;
        later(c->sent_at + c->every - now, T_RELEASE, 0, c->id, 0);
    }
}

static void release(unsigned long cid) {
    client_t *c = client_by_id(cid);
    if (!c) return;
    c->armed = 0;
    if (c->held.len) queue(c, "", 0);
}

static void output(const unsigned char *data, size_t n) {
    ring_write(data, n);
    /* bracketed paste mode; a marker may straddle two reads */
    size_t plen = H.paste_tail_len + n;
    unsigned char *probe = malloc(plen ? plen : 1);
    if (probe) {
        memcpy(probe, H.paste_tail, H.paste_tail_len);
        memcpy(probe + H.paste_tail_len, data, n);
        long on = -1, off = -1;
        for (size_t i = plen >= 8 ? plen - 8 + 1 : 0; i-- > 0;) {
            if (on < 0 && !memcmp(probe + i, PASTE_ON, 8)) on = (long)i;
            if (off < 0 && !memcmp(probe + i, PASTE_OFF, 8)) off = (long)i;
            if (on >= 0 && off >= 0) break;
        }
        if (on != off) H.paste_mode = on > off;
        size_t keep = plen < 7 ? plen : 7;
        memcpy(H.paste_tail, probe + plen - keep, keep);
        H.paste_tail_len = keep;
        free(probe);
    }
    buf_t f = {0};
    frame_into(&f, 'O', (const char *)data, n);
    for (client_t *c = H.clients; c; c = c->next) {
        if (c->fd >= 0 && c->output && c->every > 0 && !c->attached) hold(c, data, n, &f);
        else if (c->fd >= 0 && (c->attached || c->output)) queue(c, f.p, f.len);
    }
    buf_free(&f);
}

static void drain_master(void) {
    static unsigned char buf[65536];
    while (H.master >= 0) {
        ssize_t n = read(H.master, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        output(buf, (size_t)n);
    }
}

static void end_linger(void) {
    H.linger_over = 1;
    H.done = !H.leftovers_on;
}

static void leftovers_ended(void) {
    H.leftovers_on = 0;
    H.done = H.linger_over;
}

static void leftovers(ints_t *left) {
    if (H.subreaper) {
        descendants(getpid(), left);
        return;
    }
    if (killpg(H.pid, 0) == 0) ints_push(left, -H.pid);
}

static void ended(int status);

static void reap(void) {
    for (;;) {
        int status;
        pid_t pid = waitpid(H.subreaper ? -1 : H.pid, &status, WNOHANG);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) {
            if (errno == ECHILD && H.leftovers_on && H.subreaper) leftovers_ended();
            return;
        }
        if (pid == 0) return;
        if (pid == H.pid && !H.exit.has) ended(status);
        if (!H.subreaper) return;
    }
}

static void kill_leftovers(void) {
    if (!H.leftovers_on) return;
    reap();
    ints_t left = {0};
    leftovers(&left);
    if (!left.n) {
        leftovers_ended();
    } else if (monotonic() > H.leftovers_until) {
        buf_t r = {0};
        repr_ints(&r, &left);
        hlog("could not end %s; leaving them", buf_str(&r));
        buf_free(&r);
        leftovers_ended();
    } else {
        signal_each(&left, SIGKILL);
        later(LEFTOVER_CHECK, T_KILL_LEFTOVERS, 0, 0, 0);
    }
    free(left.v);
}

static void end_leftovers(void) {
    ints_t left = {0};
    leftovers(&left);
    if (left.n) {
        buf_t r = {0};
        repr_ints(&r, &left);
        hlog("the program left %s behind; ending them", buf_str(&r));
        buf_free(&r);
        H.leftovers_on = 1;
        H.leftovers_until = monotonic() + LEFTOVER_GRACE + LEFTOVER_WAIT;
        signal_each(&left, SIGTERM);
        signal_each(&left, SIGCONT); /* a stopped process gets its SIGTERM too */
        later(LEFTOVER_GRACE, T_KILL_LEFTOVERS, 0, 0, 0);
    }
    free(left.v);
}

static void ended(int status) {
    drain_master();
    exit_t *e = &H.exit;
    memset(e, 0, sizeof *e);
    if (WIFSIGNALED(status)) {
        e->has_code = 0;
        e->signal = WTERMSIG(status);
        signal_words(e->signal, e->signal_name, sizeof e->signal_name);
    } else {
        e->has_code = 1;
        e->code = WEXITSTATUS(status);
    }
    e->ended_at = wall_time();
    e->stop_requested = H.stop_requested;
    e->host_signal = H.host_signal;
    e->has = 1;
    write_record();
    buf_t r = {0};
    repr_exit(&r);
    hlog("program %d ended: %s", H.pid, buf_str(&r));
    buf_free(&r);
    buf_t ev = {0};
    exit_event(&ev);
    for (client_t *c = H.clients; c; c = c->next)
        if (c->fd >= 0 && (c->attached || c->watching)) queue_json(c, &ev);
    buf_free(&ev);
    buf_t rep = {0};
    jw_t w = jw_make(&rep, LAYOUT_WIRE);
    jw_open(&w, '{');
    jw_key(&w, "ok"); buf_puts(&rep, "true");
    jw_key(&w, "exit"); emit_exit(&w);
    jw_close(&w, '}');
    for (size_t i = 0; i < H.nwaiters; i++) queue_json(client_by_id(H.stop_waiters[i]), &rep);
    buf_free(&rep);
    H.nwaiters = 0;
    static const char gone[] = "the program ended before the text";
    for (size_t i = 0; i < H.nsends; i++) {
        reply_error(client_by_id(H.sends[i].cid), gone, sizeof gone - 1);
        buf_free(&H.sends[i].data);
    }
    H.nsends = 0;
    end_leftovers();
    if (H.host_signal) end_linger();
    else later(H.linger, T_END_LINGER, 0, 0, 0);
}

static void host_signalled(const char *name) {
    hlog("got %s; hanging up the program", name);
    if (H.exit.has) {
        if (H.leftovers_on) kill_leftovers(); /* no more grace: the host is told to go */
        end_linger();
        return;
    }
    if (!H.host_signal) {
        H.host_signal = name;
        killpg_program(SIGHUP);
        later(HANGUP_GRACE, T_KILLPG, SIGKILL, 0, 0);
    }
}

/* ------------------------------------------------------------------------------------ */
/* requests (requests.py)                                                                 */

static void next_send(void);

static void send_finish(unsigned long cid, int enter) {
    if (H.to_pty.len > H.to_pty_off) { /* still writing the paste: Enter must come after it */
        later(ENTER_PAUSE, T_SEND_FINISH, 0, cid, enter);
        return;
    }
    if (enter) write_pty("\r", 1);
    if (H.nsends) {
        buf_free(&H.sends[0].data);
        memmove(H.sends, H.sends + 1, (H.nsends - 1) * sizeof *H.sends);
        H.nsends--;
    }
    H.send_busy = 0;
    reply_ok(client_by_id(cid));
    next_send();
}

/* Deliver queued texts one at a time: paste, pause, Enter, reply. */
static void next_send(void) {
    if (H.send_busy || !H.nsends || H.exit.has) return;
    send_t *s = &H.sends[0];
    H.send_busy = 1;
    size_t n = s->data.len;
    if (n) {
        if (H.paste_mode) { /* the text must not end the paste early */
            buf_t d = {0};
            buf_puts(&d, "\x1b[200~");
            const char *p = s->data.p, *end = p + n;
            while (p < end) {
                const char *hit = memmem(p, (size_t)(end - p), "\x1b[201~", 6);
                if (!hit) { buf_add(&d, p, (size_t)(end - p)); break; }
                buf_add(&d, p, (size_t)(hit - p));
                p = hit + 6;
            }
            buf_puts(&d, "\x1b[201~");
            write_pty(d.p, d.len);
            buf_free(&d);
        } else {
            write_pty(s->data.p, n);
        }
    }
    later(n ? ENTER_PAUSE : 0.0, T_SEND_FINISH, 0, s->cid, s->enter);
}

static void resize_event(int rows, int cols) {
    buf_t b = {0};
    buf_printf(&b, "{\"event\":\"resize\",\"rows\":%d,\"cols\":%d}", rows, cols);
    for (client_t *c = H.clients; c; c = c->next)
        if (c->fd >= 0 && c->output) queue_json(c, &b);
    buf_free(&b);
}

/* Host._resize; -1 with ValueError's text when the size is out of range. */
static int do_resize(const pyint_t *rows, const pyint_t *cols, buf_t *err) {
    if (!(!rows->big && !cols->big && rows->v > 0 && rows->v < 10000 && cols->v > 0 && cols->v < 10000)) {
        buf_puts(err, "size ");
        pyint_text(err, rows);
        buf_putc(err, 'x');
        pyint_text(err, cols);
        buf_puts(err, " is out of range");
        return -1;
    }
    H.rows = (int)rows->v;
    H.cols = (int)cols->v;
    H.stirred_at = monotonic();
    resize_event(H.rows, H.cols);
    struct winsize ws = {(unsigned short)H.rows, (unsigned short)H.cols, 0, 0};
    ioctl(H.master, TIOCSWINSZ, &ws);
    killpg_program(SIGWINCH);
    return 0;
}

static void reply_size(client_t *c) {
    buf_t b = {0};
    buf_printf(&b, "{\"ok\":true,\"rows\":%d,\"cols\":%d}", H.rows, H.cols);
    queue_json(c, &b);
    buf_free(&b);
}

/* The recent output, as one output frame (none when there is none). */
static void queue_replay(client_t *c) {
    buf_t replay = {0}, f = {0};
    ring_tail(&replay, REPLAY_BYTES);
    if (replay.len) {
        frame_into(&f, 'O', replay.p, replay.len);
        queue(c, f.p, f.len);
    }
    buf_free(&replay);
    buf_free(&f);
}

/* The program's exit event, once it has ended. */
static void queue_exit(client_t *c) {
    if (!H.exit.has) return;
    buf_t ev = {0};
    exit_event(&ev);
    queue_json(c, &ev);
    buf_free(&ev);
}

static void queue_replay_and_exit(client_t *c) {
    queue_replay(c);
    queue_exit(c);
}

/* A missing key as KeyError says it: its repr. */
static int need(jval_t v, const char *key, buf_t *err) {
    if (v.type != J_NONE) return 0;
    repr_str(err, key, strlen(key));
    return -1;
}

static int op_hello(client_t *c, jdoc_t *j, buf_t *err) {
    (void)j; (void)err;
    buf_t b = {0};
    buf_puts(&b, "{\"ok\":true,\"agent\":");
    json_os(&b, H.agent);
    buf_printf(&b, ",\"pid\":%d}", (int)getpid());
    queue_json(c, &b);
    buf_free(&b);
    return 0;
}

static int op_watch(client_t *c, jdoc_t *j, buf_t *err) {
    jval_t every = jget(j, "every_ms");
    if (every.type != J_NONE && every.type != J_NULL) {
        pyint_t *e = malloc(sizeof *e);
        if (!e) { buf_puts(err, "out of memory"); return -1; }
        int rc = jwhole(j, every, "every_ms", e, err);
        if (rc == 0 && (e->big || e->v < 0 || e->v > MAX_EVERY_MS)) {
            buf_puts(err, "every_ms ");
            pyint_text(err, e);
            buf_puts(err, " is out of range");
            rc = -1;
        }
        if (rc == 0) c->every = (double)e->v / 1000.0;
        free(e);
        if (rc < 0) return -1;
    }
    c->watching = 1;
    reply_size(c);
    if (jtruthy(j, jget(j, "output"))) {
        c->output = 1;
        queue_replay(c);
    }
    queue_exit(c);
    return 0;
}

static int op_attach(client_t *c, jdoc_t *j, buf_t *err) {
    c->attached = 1;
    jval_t rows = jget(j, "rows"), cols = jget(j, "cols");
    if (jtruthy(j, rows) && jtruthy(j, cols) && !H.exit.has) {
        pyint_t *r = malloc(sizeof *r), *k = malloc(sizeof *k);
        int rc = -1;
        if (r && k && jwhole(j, rows, "rows", r, err) == 0 && jwhole(j, cols, "cols", k, err) == 0)
            rc = do_resize(r, k, err);
        else if (!r || !k) buf_puts(err, "out of memory");
        free(r);
        free(k);
        if (rc < 0) return -1;
    }
    reply_size(c);
    queue_replay_and_exit(c);
    return 0;
}

static int op_send(client_t *c, jdoc_t *j, buf_t *err) {
    jval_t text = jget(j, "text");
    if (text.type != J_STR) { buf_puts(err, "'text' must be a string"); return -1; }
    if (H.exit.has) {
        static const char m[] = "the program has ended";
        reply_error(c, m, sizeof m - 1);
        return 0;
    }
    buf_t t = {0};
    jstr(j, text, &t);
    /* str.encode(): a surrogate has no UTF-8 form */
    const unsigned char *s = (const unsigned char *)(t.p ? t.p : "");
    size_t i = 0, pos = 0, first = 0, last = 0;
    int bad = 0;
    while (i < t.len) {
        uint32_t cp;
        size_t nx = next_cp(s, t.len, i, &cp);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            if (!bad) { bad = 1; first = pos; last = pos; }
            else if (last + 1 == pos) last = pos;
        } else if (bad) {
            break;
        }
        i = nx;
        pos++;
    }
    if (bad) {
        if (first == last) {
            uint32_t cp = 0;
            size_t k = 0, q = 0;
            while (k < t.len) { size_t nx = next_cp(s, t.len, k, &cp); if (q == first) break; k = nx; q++; }
            buf_printf(err, "'utf-8' codec can't encode character '\\u%04x' in position %zu: surrogates not allowed", cp, first);
        } else {
            buf_printf(err, "'utf-8' codec can't encode characters in position %zu-%zu: surrogates not allowed", first, last);
        }
        buf_free(&t);
        return -1;
    }
    if (H.nsends == H.capsends) {
        size_t cap = H.capsends ? H.capsends * 2 : 4;
        send_t *g = realloc(H.sends, cap * sizeof *g);
        if (!g) { buf_free(&t); buf_puts(err, "out of memory"); return -1; }
        H.sends = g;
        H.capsends = cap;
    }
    jval_t enter = jget(j, "enter");
    send_t *snd = &H.sends[H.nsends++];
    snd->cid = c->id;
    snd->data = t;
    snd->enter = enter.type == J_NONE ? 1 : jtruthy(j, enter);
    next_send();
    return 0;
}

static int op_resize(client_t *c, jdoc_t *j, buf_t *err) {
    if (!H.exit.has) {
        jval_t rows = jget(j, "rows"), cols = jget(j, "cols");
        pyint_t *r = malloc(sizeof *r), *k = malloc(sizeof *k);
        int rc = -1;
        if (!r || !k) buf_puts(err, "out of memory");
        else if (need(rows, "rows", err) == 0 && jwhole(j, rows, "rows", r, err) == 0 &&
                 need(cols, "cols", err) == 0 && jwhole(j, cols, "cols", k, err) == 0)
            rc = do_resize(r, k, err);
        free(r);
        free(k);
        if (rc < 0) return -1;
    }
    reply_ok(c);
    return 0;
}

static int op_screen(client_t *c, jdoc_t *j, buf_t *err) {
    jval_t lv = jget(j, "lines");
    int64_t lines = H.rows;
    if (lv.type != J_NONE) {
        pyint_t *x = malloc(sizeof *x);
        if (!x) { buf_puts(err, "out of memory"); return -1; }
        if (jwhole(j, lv, "lines", x, err) < 0) { free(x); return -1; }
        lines = x->v; /* saturated when past int64: the same window and lines */
        free(x);
    }
    /* render only the tail the lines can come from */
    int64_t want = lines > INT64_MAX / 1024 ? INT64_MAX : (lines < INT64_MIN / 1024 ? INT64_MIN : lines * 1024);
    if (want < SCREEN_WINDOW) want = SCREEN_WINDOW;
    size_t window = (uint64_t)want < ring.filled ? (size_t)want : ring.filled;
    int cut = window < ring.filled;
    buf_t raw = {0}, text = {0}, b = {0};
    ring_tail(&raw, window);
    render((const unsigned char *)(raw.p ? raw.p : ""), raw.len, lines, cut, &text);
    buf_puts(&b, "{\"ok\":true,\"text\":");
    json_str(&b, text.p ? text.p : "", text.len);
    buf_putc(&b, '}');
    if (text.oom) b.oom = 1;
    queue_json(c, &b);
    buf_free(&raw);
    buf_free(&text);
    buf_free(&b);
    return 0;
}

static int op_signal(client_t *c, jdoc_t *j, buf_t *err) {
    jval_t sig = jget(j, "signal");
    int num = -1, found = 0;
    if (sig.type == J_STR) {
        buf_t name = {0};
        jstr(j, sig, &name);
        found = name.p && strlen(name.p) == name.len && signal_attr(name.p, name.len, &num) == 0;
        buf_free(&name);
    } else {
        pyint_t *x = malloc(sizeof *x);
        if (!x) { buf_puts(err, "out of memory"); return -1; }
        if (jwhole(j, sig, "signal", x, err) < 0) { free(x); return -1; }
        found = !x->big && x->v >= INT_MIN && x->v <= INT_MAX;
        num = found ? (int)x->v : -1;
        free(x);
    }
    if (!found || num < 0 || num >= NSIG) {
        buf_puts(err, "unknown signal ");
        jrepr(j, sig, err);
        return -1;
    }
    buf_t b = {0};
    buf_printf(&b, "{\"ok\":true,\"delivered\":%s}", killpg_program(num) ? "true" : "false");
    queue_json(c, &b);
    buf_free(&b);
    return 0;
}

static int op_stop(client_t *c, jdoc_t *j, buf_t *err) {
    if (H.exit.has) {
        buf_t b = {0};
        jw_t w = jw_make(&b, LAYOUT_WIRE);
        jw_open(&w, '{');
        jw_key(&w, "ok"); buf_puts(&b, "true");
        jw_key(&w, "exit"); emit_exit(&w);
        jw_close(&w, '}');
        queue_json(c, &b);
        buf_free(&b);
        return 0;
    }
    double grace = 5.0;
    jval_t g = jget(j, "grace");
    if (g.type != J_NONE && jreal(j, g, "grace", &grace, err) < 0) return -1;
    if (H.nwaiters == H.capwaiters) {
        size_t cap = H.capwaiters ? H.capwaiters * 2 : 4;
        unsigned long *w = realloc(H.stop_waiters, cap * sizeof *w);
        if (!w) { buf_puts(err, "out of memory"); return -1; }
        H.stop_waiters = w;
        H.capwaiters = cap;
    }
    H.stop_waiters[H.nwaiters++] = c->id;
    if (!H.stop_requested) {
        H.stop_requested = 1;
        killpg_program(SIGTERM);
        later(grace, T_KILLPG, SIGKILL, 0, 0);
    }
    return 0;
}

static int op_status(client_t *c, jdoc_t *j, buf_t *err) {
    (void)j; (void)err;
    int attached = 0;
    for (client_t *k = H.clients; k; k = k->next)
        if (k->fd >= 0 && k->attached) attached++;
    buf_t b = {0};
    jw_t w = jw_make(&b, LAYOUT_WIRE);
    jw_open(&w, '{');
    jw_key(&w, "ok"); buf_puts(&b, "true");
    jw_key(&w, "record"); emit_record(&w);
    jw_key(&w, "running"); buf_puts(&b, H.exit.has ? "false" : "true");
    jw_key(&w, "bracketed_paste"); buf_puts(&b, H.paste_mode ? "true" : "false");
    jw_key(&w, "rows"); buf_printf(&b, "%d", H.rows);
    jw_key(&w, "cols"); buf_printf(&b, "%d", H.cols);
    jw_key(&w, "attached"); buf_printf(&b, "%d", attached);
    jw_close(&w, '}');
    queue_json(c, &b);
    buf_free(&b);
    return 0;
}

/* Host._op_flush: the output held for a watch with every_ms now, then the reply (queue()
   sends what is held first). */
static int op_flush(client_t *c, jdoc_t *j, buf_t *err) {
    (void)j; (void)err;
    reply_ok(c);
    return 0;
}

static int op_close(client_t *c, jdoc_t *j, buf_t *err) {
    (void)j; (void)err;
    if (!H.exit.has) {
        static const char m[] = "the program is running; stop it first";
        reply_error(c, m, sizeof m - 1);
        return 0;
    }
    reply_ok(c);
    end_linger(); /* the host still ends what the program left behind */
    return 0;
}

static const struct {
    const char *name;
    int (*fn)(client_t *, jdoc_t *, buf_t *);
} OPS[] = {
    {"hello", op_hello}, {"watch", op_watch}, {"attach", op_attach}, {"send", op_send},
    {"resize", op_resize}, {"screen", op_screen}, {"signal", op_signal}, {"stop", op_stop},
    {"status", op_status}, {"close", op_close}, {"flush", op_flush},
};

static void request(client_t *c, jdoc_t *j) {
    jval_t op = jget(j, "op");
    int which = -1;
    if (op.type == J_STR) {
        buf_t name = {0};
        jstr(j, op, &name);
        for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
            if (name.p && name.len == strlen(OPS[i].name) && !memcmp(name.p, OPS[i].name, name.len)) which = (int)i;
        buf_free(&name);
    }
    buf_t err = {0};
    if (which < 0) {
        buf_puts(&err, "unknown request ");
        jrepr(j, op, &err);
        if (err.oom) { hlog("dropped a client that stopped reading"); drop(c); }
        else reply_error(c, err.p, err.len);
        buf_free(&err);
        return;
    }
    buf_printf(&err, "bad %s request: ", OPS[which].name);
    if (OPS[which].fn(c, j, &err) < 0) {
        if (err.oom) { hlog("dropped a client that stopped reading"); drop(c); }
        else reply_error(c, err.p, err.len);
    }
    buf_free(&err);
}

/* ------------------------------------------------------------------------------------ */
/* clients (host.py's _on_accept, _on_client)                                             */

static void on_accept(void) {
    int fd = accept4(H.listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* out of descriptors: the pending connection would wake the loop at once, for
             * ever (the Python host died of it); listen again in a moment */
            hlog("cannot accept a connection: %s", strerror(errno));
            epoll_ctl(H.ep, EPOLL_CTL_DEL, H.listener, NULL);
            later(0.1, T_LISTEN, 0, 0, 0);
        }
        return;
    }
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        /* a peer whose user cannot be read is refused, never taken for ours (fail closed) */
        hlog("refused a connection whose peer cannot be read: %s", strerror(errno));
        close(fd);
        return;
    }
    if (cred.uid != getuid()) {
        hlog("refused a connection from uid %d", (int)cred.uid);
        close(fd);
        return;
    }
    client_t *c = calloc(1, sizeof *c);
    if (!c) { close(fd); return; }
    c->fd = fd;
    c->id = ++H.next_id;
    c->events = EPOLLIN;
    c->next = NULL;
    client_t **pp = &H.clients; /* keep the order they came in */
    while (*pp) pp = &(*pp)->next;
    *pp = c;
    ep_set(fd, EPOLLIN, 1);
}

static void frame_error(client_t *c, buf_t *msg) {
    reply_error(c, msg->p ? msg->p : "", msg->len);
    flush_blocking(c);
    drop(c);
}

static void on_client(client_t *c, int readable, int writable) {
    static char buf[65536];
    if (writable) flush(c);
    if (!readable || c->fd < 0) return;
    ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) { drop(c); return; }
    buf_add(&c->in, buf, (size_t)n);
    if (c->in.oom) { drop(c); return; }
    /* FrameReader.feed: every complete frame, or a FrameError for the first bad header */
    size_t off = 0, nframes = 0;
    buf_t err = {0};
    while (c->in.len - off >= HEADER_SIZE) {
        const unsigned char *h = (const unsigned char *)c->in.p + off;
        uint32_t size = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
        if (h[0] != 'J' && h[0] != 'O' && h[0] != 'I') {
            /* repr of the kind byte: b'X' */
            unsigned char k = h[0];
            buf_puts(&err, "unknown frame kind b");
            if (k == '\'') buf_puts(&err, "\"'\"");
            else if (k == '\\') buf_puts(&err, "'\\\\'");
            else if (k == '\t') buf_puts(&err, "'\\t'");
            else if (k == '\n') buf_puts(&err, "'\\n'");
            else if (k == '\r') buf_puts(&err, "'\\r'");
            else if (k < 0x20 || k >= 0x7F) buf_printf(&err, "'\\x%02x'", k);
            else buf_printf(&err, "'%c'", k);
            break;
        }
        if (size > MAX_FRAME) {
            buf_printf(&err, "frame of %u bytes is over the %d limit", size, MAX_FRAME);
            break;
        }
        if (c->in.len - off < HEADER_SIZE + (size_t)size) break;
        off += HEADER_SIZE + size;
        nframes++;
    }
    if (err.len) {
        frame_error(c, &err);
        buf_free(&err);
        return;
    }
    size_t pos = 0;
    for (size_t k = 0; k < nframes; k++) {
        const unsigned char *h = (const unsigned char *)c->in.p + pos;
        uint32_t size = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
        const char *payload = c->in.p + pos + HEADER_SIZE;
        pos += HEADER_SIZE + size;
        if (h[0] == 'I') {
            if (c->attached) write_pty(payload, size);
        } else if (h[0] == 'J') {
            jdoc_t j;
            buf_t jerr = {0};
            if (json_loads(&j, (const unsigned char *)payload, size, 0, &jerr) < 0) {
                buf_t m = {0};
                buf_puts(&m, "bad JSON frame: ");
                buf_add(&m, jerr.p, jerr.len);
                jdoc_free(&j);
                buf_free(&jerr);
                frame_error(c, &m);
                buf_free(&m);
                return;
            }
            buf_free(&jerr);
            if (j.root.type != J_OBJ) {
                buf_t m = {0};
                buf_printf(&m, "a JSON frame must hold an object, not %s", type_name(j.root.type));
                jdoc_free(&j);
                frame_error(c, &m);
                buf_free(&m);
                return;
            }
            request(c, &j);
            jdoc_free(&j);
        }
    }
    /* keep what is not a whole frame yet */
    if (pos) {
        memmove(c->in.p, c->in.p + pos, c->in.len - pos);
        c->in.len -= pos;
    }
    if (c->in.len == 0 && c->in.cap > 65536) buf_free(&c->in);
}

/* ------------------------------------------------------------------------------------ */
/* the loop (Host.run)                                                                    */

static void on_signal_fd(void) {
    unsigned char b[512];
    ssize_t n = read(H.sig_r, b, sizeof b);
    for (ssize_t i = 0; i < n; i++) {
        if (b[i] == SIGCHLD) reap();
        else if (b[i] == SIGTERM) host_signalled("SIGTERM");
        else if (b[i] == SIGHUP) host_signalled("SIGHUP");
        else if (b[i] == SIGINT) host_signalled("SIGINT");
    }
}

static void on_master(int readable, int writable) {
    static unsigned char buf[65536];
    if (readable) {
        ssize_t n = read(H.master, buf, sizeof buf);
        if (n > 0) {
            output(buf, (size_t)n);
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            /* EIO: every slave fd is closed; SIGCHLD tells the rest */
            epoll_ctl(H.ep, EPOLL_CTL_DEL, H.master, NULL);
            H.master_events = 0;
            H.to_pty.len = H.to_pty_off = 0;
            return;
        }
    }
    if (writable) flush_pty();
}

static void on_wakeup(int signum) {
    int saved = errno;
    unsigned char b = (unsigned char)signum;
    if (write(H.sig_w, &b, 1) < 0) { /* a full pipe already says it */ }
    errno = saved;
}

static void run_timer(timer_t_ *t) {
    switch (t->kind) {
    case T_KILLPG: killpg_program(t->sig); break;
    case T_END_LINGER: end_linger(); break;
    case T_KILL_LEFTOVERS: kill_leftovers(); break;
    case T_SEND_FINISH: send_finish(t->cid, t->enter); break;
    case T_LISTEN: ep_set(H.listener, EPOLLIN, 1); break;
    case T_RELEASE: release(t->cid); break;
    }
}

static void run(void) {
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) { hlog("host failed: cannot make a pipe: %s", strerror(errno)); return; }
    H.sig_r = p[0];
    H.sig_w = p[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_wakeup;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGCHLD, SIGTERM, SIGHUP, SIGINT};
    for (size_t i = 0; i < 4; i++) sigaction(sigs[i], &sa, NULL);
    ep_set(H.sig_r, EPOLLIN, 1);
    H.master_events = EPOLLIN;
    ep_set(H.master, EPOLLIN, 1);
    reap(); /* the program may have ended before SIGCHLD had a handler */
    struct epoll_event evs[64];
    while (!H.done) {
        int timeout = -1;
        if (H.ntimers) {
            double soonest = INFINITY, now = monotonic();
            for (size_t i = 0; i < H.ntimers; i++)
                if (H.timers[i].at < soonest) soonest = H.timers[i].at; /* NaN: never due */
            if (!isinf(soonest)) {
                double left = soonest - now;
                double ms = left <= 0 ? 0 : ceil_pos(left * 1e3);
                timeout = ms > INT_MAX ? INT_MAX : (int)ms;
            }
        }
        int n = epoll_wait(H.ep, evs, 64, timeout);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            uint32_t f = evs[i].events;
            int writable = (f & ~(uint32_t)EPOLLIN) != 0, readable = (f & ~(uint32_t)EPOLLOUT) != 0;
            if (fd == H.listener) {
                if (readable) on_accept();
            } else if (fd == H.sig_r) {
                if (readable) on_signal_fd();
            } else if (fd == H.master) {
                if (H.master_events)
                    on_master(readable, writable && (H.master_events & EPOLLOUT));
            } else {
                for (client_t *c = H.clients; c; c = c->next) {
                    if (c->fd == fd) {
                        on_client(c, readable, writable && (c->events & EPOLLOUT));
                        break;
                    }
                }
            }
        }
        double now = monotonic();
        size_t ndue = 0;
        for (size_t i = 0; i < H.ntimers; i++)
            if (H.timers[i].at <= now) ndue++;
        if (ndue) {
            timer_t_ *due = malloc(ndue * sizeof *due);
            if (due) {
                size_t k = 0, keep = 0;
                for (size_t i = 0; i < H.ntimers; i++) {
                    if (H.timers[i].at <= now) due[k++] = H.timers[i];
                    else H.timers[keep++] = H.timers[i];
                }
                H.ntimers = keep;
                for (size_t i = 0; i < ndue; i++) run_timer(&due[i]);
                free(due);
            }
        }
        reap_clients();
    }
    for (client_t *c = H.clients; c; c = c->next) {
        flush_blocking(c);
        drop(c);
    }
    reap_clients();
    if (H.listener >= 0) {
        close(H.listener);
        unlink(H.socket_path);
    }
    if (H.master >= 0) close(H.master);
}

/* ------------------------------------------------------------------------------------ */
/* start-up (main.py, spawn.py, Host.listen)                                              */

static int mkdirs(const char *path) {
    char *p = strdup(path);
    if (!p) return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0700) < 0 && errno != EEXIST) { free(p); return -1; }
        *s = '/';
    }
    int rc = mkdir(p, 0700);
    int e = errno;
    free(p);
    if (rc < 0 && e != EEXIST) { errno = e; return -1; }
    struct stat st;
    if (stat(path, &st) < 0) return -1;
    if (!S_ISDIR(st.st_mode)) { errno = EEXIST; return -1; }
    return 0;
}

/* Host.listen: 0, or -1 with the reason (strerror's words) in why. */
static int listen_socket(buf_t *why) {
    char *folder = strdup(H.socket_path);
    if (!folder) { buf_puts(why, strerror(ENOMEM)); return -1; }
    char *slash = strrchr(folder, '/');
    if (!slash) { free(folder); buf_puts(why, strerror(ENOENT)); return -1; }
    if (slash == folder) slash[1] = 0; else *slash = 0;
    if (mkdirs(folder) < 0 || chmod(folder, 0700) < 0) {
        buf_puts(why, strerror(errno));
        free(folder);
        return -1;
    }
    free(folder);
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    size_t len = strlen(H.socket_path);
    if (len >= sizeof addr.sun_path) { buf_puts(why, "AF_UNIX path too long"); return -1; }
    memcpy(addr.sun_path, H.socket_path, len);
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0) {
        int rc = connect(probe, (struct sockaddr *)&addr, sizeof addr);
        close(probe);
        if (rc == 0) { buf_puts(why, "another host serves this socket"); return -1; }
    }
    if (unlink(H.socket_path) < 0 && errno != ENOENT) { buf_puts(why, strerror(errno)); return -1; }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) { buf_puts(why, strerror(errno)); return -1; }
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&addr, sizeof addr);
    int e = errno;
    umask(old);
    if (rc < 0 || chmod(H.socket_path, 0600) < 0 || listen(fd, 16) < 0) {
        buf_puts(why, strerror(rc < 0 ? e : errno));
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    H.listener = fd;
    ep_set(fd, EPOLLIN, 1);
    return 0;
}

/* spawn._start_error */
static void start_error(buf_t *out, const char *argv0, int err, const char *phase) {
    buf_t name = {0};
    repr_os(&name, argv0);
    if (!strcmp(phase, "chdir")) {
        if (err == ENOENT) { buf_puts(out, "directory "); buf_t c = {0}; from_os(&c, H.cwd, strlen(H.cwd)); buf_add(out, c.p, c.len); buf_free(&c); buf_puts(out, " does not exist"); }
        else { buf_puts(out, "cannot enter directory "); buf_t c = {0}; from_os(&c, H.cwd, strlen(H.cwd)); buf_add(out, c.p, c.len); buf_free(&c); buf_printf(out, ": %s", strerror(err)); }
    } else if (err == ENOENT) {
        buf_printf(out, "cannot start %s: %s", buf_str(&name), strchr(argv0, '/') ? "no such file" : "not found on PATH");
    } else if (err == EACCES || err == EPERM) {
        buf_printf(out, "cannot start %s: permission denied (is it executable?)", buf_str(&name));
    } else {
        buf_printf(out, "cannot start %s: %s", buf_str(&name), strerror(err));
    }
    buf_free(&name);
}

/* os.execvpe as Python does it: each PATH entry with execve, the first error that is not
 * "not there" wins.  Returns the errno to report. */
static int exec_program(void) {
    const char *file = H.argv[0];
    if (strchr(file, '/')) {
        execve(file, H.argv, H.envp);
        return errno;
    }
    const char *path = NULL;
    for (char **e = H.envp; *e; e++)
        if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
    if (!path) path = "/bin:/usr/bin";
    int saved = 0, last = ENOENT;
    const char *p = path;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t dl = colon ? (size_t)(colon - p) : strlen(p);
        char full[PATH_MAX * 2];
        if (dl == 0) snprintf(full, sizeof full, "%s", file);
        else if (p[dl - 1] == '/') snprintf(full, sizeof full, "%.*s%s", (int)dl, p, file);
        else snprintf(full, sizeof full, "%.*s/%s", (int)dl, p, file);
        execve(full, H.argv, H.envp);
        last = errno;
        if (last != ENOENT && last != ENOTDIR && !saved) saved = last;
        if (!colon) break;
        p = colon + 1;
    }
    return saved ? saved : last;
}

/* spawn.spawn_in_pty: 0, or -1 with the reason in why. */
static int spawn_in_pty(buf_t *why) {
    struct stat st;
    if (stat(H.cwd, &st) < 0 || !S_ISDIR(st.st_mode)) {
        buf_t c = {0};
        from_os(&c, H.cwd, strlen(H.cwd));
        buf_puts(why, "directory ");
        buf_add(why, c.p, c.len);
        buf_puts(why, " does not exist");
        buf_free(&c);
        return -1;
    }
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0) {
        buf_printf(why, "cannot open a PTY: %s", strerror(errno));
        if (master >= 0) close(master);
        return -1;
    }
    char slave_name[128];
    if (ptsname_r(master, slave_name, sizeof slave_name) != 0) {
        buf_printf(why, "cannot open a PTY: %s", strerror(errno));
        close(master);
        return -1;
    }
    int slave = open(slave_name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) {
        buf_printf(why, "cannot open a PTY: %s", strerror(errno));
        close(master);
        return -1;
    }
    struct winsize ws = {(unsigned short)H.rows, (unsigned short)H.cols, 0, 0};
    ioctl(slave, TIOCSWINSZ, &ws);
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) < 0) { /* EOF on it means exec succeeded */
        buf_printf(why, "cannot start the program: %s", strerror(errno));
        close(master); close(slave);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        buf_printf(why, "cannot start the program: %s", strerror(errno));
        close(master); close(slave); close(ep[0]); close(ep[1]);
        return -1;
    }
    if (pid == 0) { /* the program */
        const char *phase = "setup";
        int err = 0;
        close(master);
        close(ep[0]);
        if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0) err = errno;
        for (int fd = 0; fd < 3 && !err; fd++)
            if (dup2(slave, fd) < 0) err = errno;
        if (!err && slave > 2) close(slave);
        if (!err) {
            /* ignored signals stay ignored across exec: give the program defaults */
            int defaults[] = {SIGPIPE, SIGXFSZ, SIGCHLD, SIGTERM, SIGHUP, SIGINT};
            for (size_t i = 0; i < 6; i++) signal(defaults[i], SIG_DFL);
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
            phase = "chdir";
            if (chdir(H.cwd) < 0) err = errno;
        }
        if (!err) {
            phase = "exec";
            err = exec_program();
        }
        buf_t msg = {0};
        start_error(&msg, H.argv[0], err, phase);
        if (msg.p) {
            ssize_t w = write(ep[1], msg.p, msg.len);
            (void)w;
        }
        _exit(127);
    }
    close(slave);
    close(ep[1]);
    buf_t msg = {0};
    char chunk[4096];
    for (;;) {
        ssize_t n = read(ep[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        buf_add(&msg, chunk, (size_t)n);
    }
    close(ep[0]);
    if (msg.len) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        close(master);
        /* bytes.decode(errors="replace") */
        cps_t cps = {0};
        decode_replace((const unsigned char *)msg.p, msg.len, &cps);
        for (size_t i = 0; i < cps.n; i++) put_cp(why, cps.v[i]);
        free(cps.v);
        buf_free(&msg);
        return -1;
    }
    buf_free(&msg);
    H.pid = pid;
    H.master = master;
    fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
    return 0;
}

/* Host.start: 0, or -1 with the error written to the record. */
static int start(buf_t *why) {
    base_record();
    H.subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
    if (spawn_in_pty(why) < 0) {
        H.has_error = 1;
        buf_add(&H.error, why->p, why->len);
        write_record();
        return -1;
    }
    H.program_pid = H.pid;
    H.has_pct = start_time(H.pid, &H.pct) == 0;
    H.has_pst = start_ticks(H.pid, &H.pst) == 0;
    write_record();
    return 0;
}

/* main._tell: one JSON line on the ready fd, then close it. */
static void tell(int fd, int ok, const char *error, size_t elen) {
    if (fd < 0) return;
    buf_t b = {0};
    jw_t w = jw_make(&b, LAYOUT_DEFAULT);
    jw_open(&w, '{');
    jw_key(&w, "ok"); buf_puts(&b, ok ? "true" : "false");
    if (!ok) { jw_key(&w, "error"); json_str(&b, error, elen); }
    jw_key(&w, "record"); emit_record(&w);
    jw_close(&w, '}');
    buf_putc(&b, '\n');
    size_t off = 0;
    while (!b.oom && off < b.len) {
        ssize_t n = write(fd, b.p + off, b.len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        off += (size_t)n;
    }
    buf_free(&b);
    close(fd);
}

#define USAGE                                                                              \
    "usage: python -m volee_desktop.hosts.main --agent AG --record PATH --socket PATH "   \
    "[--cwd DIR] [--env-file F] [--rows R] [--cols C] [--linger S] [--ready-fd N] "       \
    "[--foreground] -- argv..."

static void usage_exit(const char *what, const char *arg) {
    if (what && arg) {
        buf_t r = {0};
        repr_os(&r, arg);
        fprintf(stderr, "%s %s\n%s\n", what, buf_str(&r), USAGE);
        buf_free(&r);
    } else if (what) {
        fprintf(stderr, "%s\n%s\n", what, USAGE);
    } else {
        fprintf(stderr, "%s\n", USAGE);
    }
    exit(1);
}

/* int() of a command-line value; a bad one ends the host as Python's ValueError did. */
static long long arg_int(const char *name, const char *value) {
    pyint_t *x = malloc(sizeof *x);
    buf_t err = {0}, s = {0};
    from_os(&s, value, strlen(value));
    if (!x || pyint_from_str(x, s.p ? s.p : "", s.len, &err) < 0) {
        fprintf(stderr, "host failed: --%s: %s\n", name, buf_str(&err));
        exit(1);
    }
    long long v = x->v;
    if (x->big || v < INT_MIN || v > INT_MAX) {
        fprintf(stderr, "host failed: --%s: %s is out of range\n", name, value);
        exit(1);
    }
    free(x);
    buf_free(&s);
    return v;
}

static double arg_float(const char *name, const char *value) {
    double d;
    buf_t err = {0}, s = {0};
    from_os(&s, value, strlen(value));
    if (pyfloat_from_str(&d, s.p ? s.p : "", s.len, &err) < 0) {
        fprintf(stderr, "host failed: --%s: %s\n", name, buf_str(&err));
        exit(1);
    }
    buf_free(&s);
    return d;
}

/* The program's environment from the launcher's env file (a JSON object of strings). */
static char **read_env_file(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        hlog("host failed: [Errno %d] %s: '%s'", errno, strerror(errno), path);
        exit(1);
    }
    buf_t raw = {0};
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        buf_add(&raw, chunk, (size_t)n);
    }
    close(fd);
    jdoc_t j;
    buf_t err = {0};
    if (json_loads(&j, (const unsigned char *)(raw.p ? raw.p : ""), raw.len, 1, &err) < 0 || j.root.type != J_OBJ) {
        hlog("host failed: the env file %s is not a JSON object: %s", path, buf_str(&err));
        exit(1);
    }
    size_t n = j.p.nmem;
    char **envp = calloc(n + 1, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; envp && i < n; i++) {
        member_t *m = &j.p.mem[i];
        if (m->val.type != J_STR) continue;
        /* a later duplicate key wins, in the first one's place */
        int later_dup = 0;
        for (size_t q = i + 1; q < n; q++)
            if (j.p.mem[q].key_len == m->key_len && !memcmp(j.p.keys.p + j.p.mem[q].key_off, j.p.keys.p + m->key_off, m->key_len))
                later_dup = 1;
        if (later_dup) continue;
        buf_t s = {0}, v = {0}, e = {0};
        to_os(&e, j.p.keys.p + m->key_off, m->key_len);
        buf_putc(&e, '=');
        jstr(&j, m->val, &s);
        to_os(&e, s.p ? s.p : "", s.len);
        buf_free(&s);
        buf_free(&v);
        if (!e.oom && e.p) envp[k++] = e.p;
    }
    jdoc_free(&j);
    buf_free(&raw);
    unlink(path);
    return envp;
}

/* os.path.abspath after chdir("/"): normpath of the path under "/". */
static char *abspath(const char *path) {
    size_t n = strlen(path);
    char *joined = malloc(n + 2);
    if (!joined) return NULL;
    if (path[0] == '/') memcpy(joined, path, n + 1);
    else { joined[0] = '/'; memcpy(joined + 1, path, n + 1); }
    int initial = 1; /* posixpath: exactly two leading slashes stay */
    if (joined[0] == '/' && joined[1] == '/' && joined[2] != '/') initial = 2;
    char *out = malloc(strlen(joined) + 3);
    if (!out) { free(joined); return NULL; }
    const char **parts = malloc((strlen(joined) + 1) * sizeof *parts);
    size_t *lens = malloc((strlen(joined) + 1) * sizeof *lens);
    size_t np = 0;
    for (char *p = joined; *p;) {
        while (*p == '/') p++;
        if (!*p) break;
        char *q = p;
        while (*q && *q != '/') q++;
        size_t l = (size_t)(q - p);
        if (l == 1 && p[0] == '.') {}
        else if (l == 2 && p[0] == '.' && p[1] == '.') { if (np) np--; }
        else { parts[np] = p; lens[np] = l; np++; }
        p = q;
    }
    size_t o = 0;
    for (int i = 0; i < initial; i++) out[o++] = '/';
    for (size_t i = 0; i < np; i++) {
        if (i) out[o++] = '/';
        memcpy(out + o, parts[i], lens[i]);
        o += lens[i];
    }
    out[o] = 0;
    free(parts);
    free(lens);
    free(joined);
    return out;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN); /* as CPython starts */
    signal(SIGXFSZ, SIG_IGN);
    int split = -1;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) { split = i; break; }
    if (split < 0) usage_exit(NULL, NULL);
    const char *opt_agent = NULL, *opt_record = NULL, *opt_socket = NULL, *opt_cwd = NULL,
               *opt_env = NULL, *opt_rows = NULL, *opt_cols = NULL, *opt_linger = NULL, *opt_ready = NULL;
    int foreground = 0;
    struct { const char *name; const char **slot; } known[] = {
        {"agent", &opt_agent}, {"record", &opt_record}, {"socket", &opt_socket}, {"cwd", &opt_cwd},
        {"env-file", &opt_env}, {"rows", &opt_rows}, {"cols", &opt_cols}, {"linger", &opt_linger},
        {"ready-fd", &opt_ready},
    };
    for (int i = 1; i < split;) {
        const char *a = argv[i];
        const char *name = strlen(a) >= 2 ? a + 2 : "";
        if (!strcmp(name, "foreground")) { foreground = 1; i++; continue; }
        const char **slot = NULL;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            if (!strcmp(name, known[k].name)) slot = known[k].slot;
        if (strncmp(a, "--", 2) || !slot || i + 1 >= split) usage_exit("bad option", a);
        *slot = argv[i + 1];
        i += 2;
    }
    if (!opt_agent) usage_exit("--agent is required", NULL);
    if (!opt_record) usage_exit("--record is required", NULL);
    if (!opt_socket) usage_exit("--socket is required", NULL);
    if (split + 1 >= argc) usage_exit("no program given", NULL);
    H.agent = opt_agent;
    H.record_path = opt_record;
    H.socket_path = opt_socket;
    H.argv = argv + split + 1;
    H.listener = H.master = H.sig_r = H.sig_w = -1;
    int ready = opt_ready ? (int)arg_int("ready-fd", opt_ready) : -1;
    if (ready >= 0) fcntl(ready, F_SETFD, FD_CLOEXEC); /* the program must not hold it */
    H.envp = opt_env ? read_env_file(opt_env) : environ;
    if (!H.envp) { hlog("host failed: out of memory"); return 1; }
    if (!foreground) {
        if (getsid(0) != getpid()) setsid();
        pid_t pid = fork();
        if (pid < 0) { hlog("host failed: cannot fork: %s", strerror(errno)); return 1; }
        if (pid > 0) _exit(0);
    }
    umask(077);
    if (chdir("/") < 0) { /* hold no folder (the program gets its own cwd) */ }
    signal(SIGHUP, SIG_IGN); /* until run() installs its handlers */
    H.cwd = abspath(opt_cwd ? opt_cwd : "/");
    H.rows = opt_rows ? (int)arg_int("rows", opt_rows) : 40;
    H.cols = opt_cols ? (int)arg_int("cols", opt_cols) : 120;
    H.linger = opt_linger ? arg_float("linger", opt_linger) : DEFAULT_LINGER;
    H.stirred_at = -INFINITY;
    H.ep = epoll_create1(EPOLL_CLOEXEC);
    if (!H.cwd || H.ep < 0) { hlog("host failed: %s", strerror(errno)); return 1; }
    buf_t why = {0};
    if (listen_socket(&why) < 0) {
        buf_t error = {0};
        buf_puts(&error, "cannot serve socket ");
        from_os(&error, H.socket_path, strlen(H.socket_path));
        buf_puts(&error, ": ");
        buf_add(&error, why.p, why.len);
        hlog("%s", buf_str(&error));
        base_record();
        H.has_error = 1;
        buf_add(&H.error, error.p, error.len);
        write_record();
        tell(ready, 0, error.p, error.len);
        return 1;
    }
    if (start(&why) < 0) {
        hlog("%s", buf_str(&why));
        tell(ready, 0, why.p, why.len);
        return 1;
    }
    buf_t r = {0};
    buf_putc(&r, '[');
    for (char **a = H.argv; *a; a++) {
        if (a != H.argv) buf_puts(&r, ", ");
        repr_os(&r, *a);
    }
    buf_putc(&r, ']');
    hlog("started %s as pid %d (native host)", buf_str(&r), H.pid);
    buf_free(&r);
    tell(ready, 1, NULL, 0);
    run();
    hlog("host exits");
    return 0;
}
