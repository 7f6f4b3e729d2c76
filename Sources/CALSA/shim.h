#include <alsa/asoundlib.h>

// libasound prints its own diagnostics ("ALSA lib pcm.c:…") to stderr through a variadic
// handler Swift cannot define; the agent reports every failure itself (with snd_strerror),
// so these keep the journal to one line per failure.
static void osh_alsa_quiet_handler(const char *file, int line, const char *function, int err,
                                   const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void osh_alsa_silence_library_errors(void) {
    snd_lib_error_set_handler(osh_alsa_quiet_handler);
}
