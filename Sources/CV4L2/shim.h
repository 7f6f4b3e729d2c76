#include <linux/videodev2.h>
#include <libv4l2.h>

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
