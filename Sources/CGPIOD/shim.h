#include <gpiod.h>

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
