/*
 * vpi-probe: the device calls osh-edge makes, for selftest.sh's guest (built static, arm64).
 *
 *   vpi-probe i2c DEV ADDR REG COUNT   one I2C_RDWR ioctl: write [REG], repeated start, read
 *                                      COUNT bytes; prints them as hex, or the errno name
 *   vpi-probe chipinfo DEV             GPIO_GET_CHIPINFO_IOCTL: prints "name label lines"
 *   vpi-probe edges DEV LINE PULLFILE  request LINE as input with both edges (uAPI v2), write
 *                                      pull-up then pull-down into gpio-sim's PULLFILE, print
 *                                      the edge events read back ("rising falling")
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/gpio.h>
#include <linux/i2c-dev.h>
#include <linux/i2c.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int fail(const char *what)
{
	int e = errno;

	printf("%s: errno %d %s\n", what, e,
	       e == ENXIO ? "ENXIO" : e == EOPNOTSUPP ? "EOPNOTSUPP" : strerror(e));
	return 1;
}

static int do_i2c(const char *dev, int addr, int reg, int count)
{
	unsigned char w = (unsigned char)reg, r[64];
	struct i2c_msg msgs[2] = {
		{ .addr = addr, .flags = 0, .len = 1, .buf = &w },
		{ .addr = addr, .flags = I2C_M_RD, .len = count, .buf = r },
	};
	struct i2c_rdwr_ioctl_data data = { .msgs = msgs, .nmsgs = 2 };
	int fd = open(dev, O_RDWR), i;

	if (count < 1 || count > (int)sizeof(r))
		return 2;
	if (fd < 0)
		return fail("open");
	if (ioctl(fd, I2C_RDWR, &data) < 0)
		return fail("I2C_RDWR");
	for (i = 0; i < count; i++)
		printf("%s%02x", i ? " " : "", r[i]);
	printf("\n");
	return 0;
}

static int do_chipinfo(const char *dev)
{
	struct gpiochip_info info;
	int fd = open(dev, O_RDWR);

	if (fd < 0)
		return fail("open");
	if (ioctl(fd, GPIO_GET_CHIPINFO_IOCTL, &info) < 0)
		return fail("GPIO_GET_CHIPINFO_IOCTL");
	printf("%s %s %u\n", info.name, info.label, info.lines);
	return 0;
}

static int set_pull(const char *file, const char *pull)
{
	int fd = open(file, O_WRONLY), ok;

	if (fd < 0)
		return fail(file);
	ok = write(fd, pull, strlen(pull)) == (ssize_t)strlen(pull);
	close(fd);
	return ok ? 0 : fail("write pull");
}

static int read_edge(int fd)
{
	static int events;
	struct gpio_v2_line_event ev;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 5000) != 1) {
		printf("%stimeout", events++ ? " " : "");
		return 1;
	}
	if (read(fd, &ev, sizeof(ev)) != sizeof(ev))
		return fail("read event");
	printf("%s%s", events++ ? " " : "",
	       ev.id == GPIO_V2_LINE_EVENT_RISING_EDGE ? "rising" : "falling");
	return 0;
}

static int do_edges(const char *dev, unsigned int line, const char *pullfile)
{
	struct gpio_v2_line_request req;
	int fd = open(dev, O_RDWR), rc = 0;

	if (fd < 0)
		return fail("open");
	if (set_pull(pullfile, "pull-down"))   /* known start level */
		return 1;
	memset(&req, 0, sizeof(req));
	req.offsets[0] = line;
	req.num_lines = 1;
	req.config.flags = GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING |
			   GPIO_V2_LINE_FLAG_EDGE_FALLING;
	strcpy(req.consumer, "vpi-probe");
	if (ioctl(fd, GPIO_V2_GET_LINE_IOCTL, &req) < 0)
		return fail("GPIO_V2_GET_LINE_IOCTL");
	rc |= set_pull(pullfile, "pull-up") || read_edge(req.fd);
	rc |= set_pull(pullfile, "pull-down") || read_edge(req.fd);
	printf("\n");
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "i2c"))
		return do_i2c(argv[2], strtol(argv[3], NULL, 0), strtol(argv[4], NULL, 0),
			      strtol(argv[5], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "chipinfo"))
		return do_chipinfo(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "edges"))
		return do_edges(argv[2], strtoul(argv[3], NULL, 0), argv[4]);
	fprintf(stderr, "usage: vpi-probe i2c DEV ADDR REG COUNT | chipinfo DEV | edges DEV LINE PULLFILE\n");
	return 2;
}
