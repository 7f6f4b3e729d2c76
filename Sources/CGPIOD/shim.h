#include <gpiod.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// libgpiod 1.x (Debian bookworm, Pi OS bookworm) and 2.x (trixie) have different
// APIs. Only 1.x defines GPIOD_LINE_BULK_MAX_LINES, so it tells them apart at
// compile time; Swift reads OSH_GPIOD_MAJOR to pick the code path.
#ifdef GPIOD_LINE_BULK_MAX_LINES
#define OSH_GPIOD_MAJOR 1
static inline const char *osh_gpiod_version(void) { return gpiod_version_string(); }
#else
#define OSH_GPIOD_MAJOR 2
static inline const char *osh_gpiod_version(void) { return gpiod_api_version(); }
#endif

// One output line, the same four calls on both APIs, so the Swift side has no #if.
// osh_gpio_out_open returns NULL with errno set:
//   ENOENT  no chip matches `chip` (a /dev path, a name "gpiochipN", a number, or a label
//           such as "pinctrl-rp1")
//   ERANGE  `offset` is not a line of that chip
//   EBUSY   another consumer holds the line; its label is copied to `busy_by`
//   EACCES/EPERM  no permission on /dev/gpiochipN
// `value` is the initial physical level, so the line never glitches on request.
typedef struct osh_gpio_out osh_gpio_out;

static inline void osh_gpio_copy(char *dst, size_t len, const char *src) {
    if (!dst || len == 0) return;
    snprintf(dst, len, "%s", src ? src : "");
}

// The label of the chip at `path` ("pinctrl-rp1") into `out`; 0, or -1 with errno set.
static inline int osh_gpio_chip_label(const char *path, char *out, size_t len);

#if OSH_GPIOD_MAJOR == 1

static inline int osh_gpio_chip_label(const char *path, char *out, size_t len) {
    struct gpiod_chip *c = gpiod_chip_open(path);
    if (!c) return -1;
    osh_gpio_copy(out, len, gpiod_chip_label(c));
    gpiod_chip_close(c);
    return 0;
}

struct osh_gpio_out { struct gpiod_chip *chip; struct gpiod_line *line; };

static inline osh_gpio_out *osh_gpio_out_open(const char *chip, unsigned int offset, const char *consumer,
                                              int value, char *busy_by, size_t busy_len) {
    osh_gpio_copy(busy_by, busy_len, "");
    errno = 0;
    struct gpiod_chip *c = gpiod_chip_open_lookup(chip);   // path, name, label or number
    if (!c) { if (errno == 0 || errno == ENOTTY) errno = ENOENT; return NULL; }
    if (offset >= gpiod_chip_num_lines(c)) { gpiod_chip_close(c); errno = ERANGE; return NULL; }
    struct gpiod_line *l = gpiod_chip_get_line(c, offset);
    if (!l) { int e = errno; gpiod_chip_close(c); errno = e; return NULL; }
    if (gpiod_line_request_output(l, consumer, value) < 0) {
        int e = errno;
        if (e == EBUSY && gpiod_line_update(l) == 0) osh_gpio_copy(busy_by, busy_len, gpiod_line_consumer(l));
        gpiod_chip_close(c);
        errno = e;
        return NULL;
    }
    osh_gpio_out *o = malloc(sizeof *o);
    if (!o) { gpiod_line_release(l); gpiod_chip_close(c); errno = ENOMEM; return NULL; }
    o->chip = c;
    o->line = l;
    return o;
}

static inline int osh_gpio_out_set(osh_gpio_out *o, int value) { return gpiod_line_set_value(o->line, value); }

static inline void osh_gpio_out_close(osh_gpio_out *o) {
    if (!o) return;
    gpiod_line_release(o->line);
    gpiod_chip_close(o->chip);
    free(o);
}

#else

struct osh_gpio_out { struct gpiod_line_request *req; unsigned int offset; };

static inline int osh_gpio_chip_label(const char *path, char *out, size_t len) {
    struct gpiod_chip *c = gpiod_chip_open(path);
    if (!c) return -1;
    struct gpiod_chip_info *info = gpiod_chip_get_info(c);
    if (!info) { int e = errno; gpiod_chip_close(c); errno = e; return -1; }
    osh_gpio_copy(out, len, gpiod_chip_info_get_label(info));
    gpiod_chip_info_free(info);
    gpiod_chip_close(c);
    return 0;
}

// 2.x opens chips by path only; names, numbers and labels are resolved here the way
// 1.x's gpiod_chip_open_lookup did.
static inline struct gpiod_chip *osh_gpio_chip_lookup(const char *spec) {
    char path[PATH_MAX];
    if (spec[0] == '/') return gpiod_chip_open(spec);
    size_t n = strspn(spec, "0123456789");
    if (n > 0 && spec[n] == 0) {
        snprintf(path, sizeof path, "/dev/gpiochip%s", spec);
        return gpiod_chip_open(path);
    }
    if (strncmp(spec, "gpiochip", 8) == 0) {
        snprintf(path, sizeof path, "/dev/%s", spec);
        return gpiod_chip_open(path);
    }
    DIR *d = opendir("/dev");
    if (!d) return NULL;
    struct dirent *e;
    int denied = 0;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "gpiochip", 8) != 0) continue;
        snprintf(path, sizeof path, "/dev/%s", e->d_name);
        struct gpiod_chip *c = gpiod_chip_open(path);
        if (!c) { if (errno == EACCES || errno == EPERM) denied = errno; continue; }
        struct gpiod_chip_info *info = gpiod_chip_get_info(c);
        int match = info && strcmp(gpiod_chip_info_get_label(info), spec) == 0;
        if (info) gpiod_chip_info_free(info);
        if (match) { closedir(d); return c; }
        gpiod_chip_close(c);
    }
    closedir(d);
    errno = denied ? denied : ENOENT;   // a chip we could not open might have been the one
    return NULL;
}

static inline osh_gpio_out *osh_gpio_out_open(const char *chip, unsigned int offset, const char *consumer,
                                              int value, char *busy_by, size_t busy_len) {
    osh_gpio_copy(busy_by, busy_len, "");
    errno = 0;
    struct gpiod_chip *c = osh_gpio_chip_lookup(chip);
    if (!c) { if (errno == 0 || errno == ENOTTY || errno == ENODEV) errno = ENOENT; return NULL; }
    struct gpiod_chip_info *info = gpiod_chip_get_info(c);
    size_t lines = info ? gpiod_chip_info_get_num_lines(info) : 0;
    if (info) gpiod_chip_info_free(info);
    if (offset >= lines) { gpiod_chip_close(c); errno = ERANGE; return NULL; }

    struct gpiod_line_settings *s = gpiod_line_settings_new();
    struct gpiod_line_config *lc = gpiod_line_config_new();
    struct gpiod_request_config *rc = gpiod_request_config_new();
    struct gpiod_line_request *req = NULL;
    int e = ENOMEM;
    if (s && lc && rc &&
        gpiod_line_settings_set_direction(s, GPIOD_LINE_DIRECTION_OUTPUT) == 0 &&
        gpiod_line_settings_set_output_value(s, value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE) == 0 &&
        gpiod_line_config_add_line_settings(lc, &offset, 1, s) == 0) {
        gpiod_request_config_set_consumer(rc, consumer);
        req = gpiod_chip_request_lines(c, rc, lc);
        e = errno;
    }
    if (!req && e == EBUSY) {
        struct gpiod_line_info *li = gpiod_chip_get_line_info(c, offset);
        if (li) { osh_gpio_copy(busy_by, busy_len, gpiod_line_info_get_consumer(li)); gpiod_line_info_free(li); }
    }
    if (rc) gpiod_request_config_free(rc);
    if (lc) gpiod_line_config_free(lc);
    if (s) gpiod_line_settings_free(s);
    gpiod_chip_close(c);   // the request keeps its own file descriptor
    if (!req) { errno = e; return NULL; }
    osh_gpio_out *o = malloc(sizeof *o);
    if (!o) { gpiod_line_request_release(req); errno = ENOMEM; return NULL; }
    o->req = req;
    o->offset = offset;
    return o;
}

static inline int osh_gpio_out_set(osh_gpio_out *o, int value) {
    return gpiod_line_request_set_value(o->req, o->offset, value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
}

static inline void osh_gpio_out_close(osh_gpio_out *o) {
    if (!o) return;
    gpiod_line_request_release(o->req);
    free(o);
}

#endif
