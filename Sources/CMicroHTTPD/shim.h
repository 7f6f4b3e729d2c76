#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <microhttpd.h>

/* Non-variadic wrappers for the development node (OSHDevNode): Swift cannot call C
 * variadic functions, and a few of MHD's constants are casting macros Swift does not import. */

/* MHD_CONTENT_READER_END_WITH_ERROR: a content reader returning this makes MHD close the
 * connection abruptly (the client sees a truncated body). */
static inline ssize_t oshdev_reader_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }

static inline uint64_t oshdev_size_unknown(void) { return MHD_SIZE_UNKNOWN; }

/* URI log callback: called with the raw request URI (query included, nothing decoded)
 * before the access handler; its return value becomes the request's *con_cls. */
typedef void *(*oshdev_uri_log_callback)(void *cls, const char *uri, struct MHD_Connection *con);

/* Starts a daemon bound to `ipv4` (dotted quad) and `port` (0 = any free port), with an
 * internal polling thread and one thread per connection. `key_pem`/`cert_pem` non-NULL
 * add MHD_USE_TLS (GnuTLS). The listen address may be reused at once (pause/resume on the
 * same port). Returns NULL on failure (errno may tell why) or for an invalid address. */
static inline struct MHD_Daemon *oshdev_start_daemon(
    unsigned int flags, uint16_t port, const char *ipv4,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, oshdev_uri_log_callback uri_log, void *cls,
    const char *key_pem, const char *cert_pem, unsigned int timeout_seconds)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (inet_pton(AF_INET, ipv4, &sa.sin_addr) != 1) return NULL;
    struct MHD_OptionItem tls[3] = {
        { MHD_OPTION_END, 0, NULL }, { MHD_OPTION_END, 0, NULL }, { MHD_OPTION_END, 0, NULL } };
    if (key_pem != NULL && cert_pem != NULL) {
        flags |= MHD_USE_TLS;
        tls[0].option = MHD_OPTION_HTTPS_MEM_KEY;  tls[0].ptr_value = (void *) key_pem;
        tls[1].option = MHD_OPTION_HTTPS_MEM_CERT; tls[1].ptr_value = (void *) cert_pem;
    }
    /* No MHD_OPTION_LISTENING_ADDRESS_REUSE: its 1 adds SO_REUSEPORT, and a second node then binds
       the same port and takes half the connections. libmicrohttpd's default is SO_REUSEADDR alone,
       enough to bind again at once after a kill with connections open. */
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &sa,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, cls,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_ARRAY, tls,
                            MHD_OPTION_END);
}

/* The port the daemon is bound to (0 if unknown). */
static inline uint16_t oshdev_bound_port(struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info != NULL ? info->port : 0;
}

/* Constants whose Swift import (enum case names) differs between compilers. */
static inline enum MHD_Result oshdev_yes(void) { return MHD_YES; }
static inline enum MHD_Result oshdev_no(void) { return MHD_NO; }
static inline int oshdev_tls_supported(void) { return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES; }

/* A request header's value (case-insensitive name), or NULL. */
static inline const char *oshdev_header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* A response whose body is copied from `data` (`size` may be 0 with `data` NULL). */
static inline struct MHD_Response *oshdev_response_copy(size_t size, const void *data)
{
    return MHD_create_response_from_buffer(size, (void *) data, MHD_RESPMEM_MUST_COPY);
}

/* Flags for oshdev_start_daemon: an internal polling thread plus one thread per connection. */
static inline unsigned int oshdev_threaded_flags(void)
{
    return (unsigned int) (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION);
}

/* --- WebSocket receivers of the development node (command channel) --- */

/* oshdev_threaded_flags plus MHD_ALLOW_UPGRADE (101 responses hand the socket to the app). */
static inline unsigned int oshdev_threaded_upgrade_flags(void)
{
    return oshdev_threaded_flags() | (unsigned int) MHD_ALLOW_UPGRADE;
}

static inline int oshdev_upgrade_supported(void) { return MHD_is_feature_supported(MHD_FEATURE_UPGRADE) == MHD_YES; }

/* MHD_upgrade_action is variadic: the one action the node uses. */
static inline enum MHD_Result oshdev_upgrade_close(struct MHD_UpgradeResponseHandle *urh)
{
    return MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}
