#include <linux/videodev2.h>
#include <libv4l2.h>
#include <libv4l-plugin.h>
#include <libv4lconvert.h>
#include <errno.h>
#include <string.h>

// The VIDIOC_* request codes are _IOWR(...) expressions Swift cannot import; these
// constants carry their values (sizes of the structs on this architecture included).
static const unsigned long OSH_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long OSH_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long OSH_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
static const unsigned long OSH_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long OSH_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long OSH_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long OSH_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long OSH_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long OSH_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long OSH_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long OSH_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
static const unsigned long OSH_VIDIOC_S_PARM = VIDIOC_S_PARM;
static const unsigned long OSH_VIDIOC_S_CTRL = VIDIOC_S_CTRL;
static const unsigned long OSH_VIDIOC_EXPBUF = VIDIOC_EXPBUF;

static const unsigned int OSH_V4L2_CID_MPEG_VIDEO_BITRATE = V4L2_CID_MPEG_VIDEO_BITRATE;
static const unsigned int OSH_V4L2_CID_MPEG_VIDEO_H264_I_PERIOD = V4L2_CID_MPEG_VIDEO_H264_I_PERIOD;
static const unsigned int OSH_V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER = V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER;
static const unsigned int OSH_V4L2_CID_MPEG_VIDEO_H264_LEVEL = V4L2_CID_MPEG_VIDEO_H264_LEVEL;
static const unsigned int OSH_V4L2_CID_MPEG_VIDEO_H264_PROFILE = V4L2_CID_MPEG_VIDEO_H264_PROFILE;

// MJPEG, RGB24 and BGR24 → I420 through libv4lconvert (libv4l's own conversion, which copes
// with what UVC cameras send: MJPEG frames without Huffman tables, 4:2:2 and 4:2:0 sampling).
// The converter is made without a device: its device operations answer QUERYCAP as a plain
// capture node and nothing else, so it applies no per-camera quirks (flips, software white
// balance) and touches no fd.
static inline int osh_convert_no_device_ioctl(void *priv, int fd, unsigned long request, void *arg) {
    (void)priv;
    (void)fd;
    if (request == VIDIOC_QUERYCAP) {
        struct v4l2_capability *c = (struct v4l2_capability *)arg;
        memset(c, 0, sizeof *c);
        strcpy((char *)c->driver, "osh-edge");
        strcpy((char *)c->card, "frame converter");
        c->capabilities = c->device_caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING;
        return 0;
    }
    errno = EINVAL;
    return -1;
}

static const struct libv4l_dev_ops osh_convert_no_device_ops = { .ioctl = osh_convert_no_device_ioctl };

static inline struct v4lconvert_data *osh_converter_create(void) {
    return v4lconvert_create_with_dev_ops(-1, NULL, &osh_convert_no_device_ops);
}

/// One `fourcc` frame of `width`×`height` (`bytes_per_line`: 0 for MJPEG) into tightly packed
/// I420 at `dst`; the bytes written, or -1 (v4lconvert_get_error_message says why).
static inline int osh_convert_to_i420(struct v4lconvert_data *d, unsigned int fourcc, unsigned int width,
                                      unsigned int height, unsigned int bytes_per_line,
                                      const unsigned char *src, int src_size, unsigned char *dst, int dst_size) {
    struct v4l2_format sf, df;
    memset(&sf, 0, sizeof sf);
    sf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    sf.fmt.pix.width = width;
    sf.fmt.pix.height = height;
    sf.fmt.pix.pixelformat = fourcc;
    sf.fmt.pix.field = V4L2_FIELD_NONE;
    sf.fmt.pix.bytesperline = bytes_per_line;
    sf.fmt.pix.sizeimage = (unsigned int)src_size;
    df = sf;
    df.fmt.pix.pixelformat = V4L2_PIX_FMT_YUV420;
    df.fmt.pix.bytesperline = width;
    df.fmt.pix.sizeimage = (unsigned int)dst_size;
    return v4lconvert_convert(d, &sf, &df, (unsigned char *)src, src_size, dst, dst_size);
}

// The media controller (`/dev/media*`): which driver, which camera sensor, which video nodes.
// A camera sensor behind a media controller (a Raspberry Pi Camera Module on unicam or the Pi 5's
// CFE, the kernel's vimc) gives raw Bayer; libcamera turns it into pictures.
#include <linux/media.h>
static const unsigned long OSH_MEDIA_IOC_DEVICE_INFO = MEDIA_IOC_DEVICE_INFO;
static const unsigned long OSH_MEDIA_IOC_ENUM_ENTITIES = MEDIA_IOC_ENUM_ENTITIES;
static const unsigned int OSH_MEDIA_ENT_ID_FLAG_NEXT = MEDIA_ENT_ID_FLAG_NEXT;
static const unsigned int OSH_MEDIA_ENT_F_CAM_SENSOR = MEDIA_ENT_F_CAM_SENSOR;
static const unsigned int OSH_MEDIA_ENT_F_IO_V4L = MEDIA_ENT_F_IO_V4L;
static inline unsigned int osh_media_entity_major(const struct media_entity_desc *e) { return e->dev.major; }
static inline unsigned int osh_media_entity_minor(const struct media_entity_desc *e) { return e->dev.minor; }
