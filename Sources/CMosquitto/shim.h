#include <mosquitto.h>
#include <mqtt_protocol.h>

// libmosquitto's connect with MQTT 5 properties (the session expiry) is blocking: name
// resolution, the TCP connect and the TLS handshake run inside it, and a broker that never
// answers holds it for the kernel's SYN timeout. So it runs on a short-lived thread of its own,
// and the event loop does not touch the handle until that thread has returned and signalled an
// eventfd (the eventfd's write and read order the two threads' memory). Only API present in
// libmosquitto 2.0.11 (Debian bookworm) is used.
#ifndef OSH_CMOSQUITTO_SHIM_H
#define OSH_CMOSQUITTO_SHIM_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct osh_mqtt_connect {
    struct mosquitto *mosq;
    char *host;
    int port;
    int keepalive;
    uint32_t session_expiry;
    int event_fd;
    int rc;       // MOSQ_ERR_* once done
    int err;      // errno when rc == MOSQ_ERR_ERRNO
    int refs;     // the thread's and the caller's
    int abandoned;  // the caller let go while the thread ran: the last one out destroys the client
} osh_mqtt_connect;

static inline void osh_mqtt_connect_unref(osh_mqtt_connect *c) {
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        if (__atomic_load_n(&c->abandoned, __ATOMIC_ACQUIRE)) mosquitto_destroy(c->mosq);
        close(c->event_fd);
        free(c->host);
        free(c);
    }
}

static inline void *osh_mqtt_connect_thread(void *arg) {
    osh_mqtt_connect *c = (osh_mqtt_connect *)arg;
    mosquitto_property *props = NULL;
    if (c->session_expiry > 0) {
        mosquitto_property_add_int32(&props, MQTT_PROP_SESSION_EXPIRY_INTERVAL, c->session_expiry);
    }
    errno = 0;
    c->rc = mosquitto_connect_bind_v5(c->mosq, c->host, c->port, c->keepalive, NULL, props);
    c->err = errno;
    mosquitto_property_free_all(&props);
    uint64_t one = 1;
    ssize_t w = write(c->event_fd, &one, sizeof one);
    (void)w;
    osh_mqtt_connect_unref(c);
    return NULL;
}

/// Starts the connect on its own thread; returns the handle (its `event_fd` becomes readable when
/// the connect returned), or NULL with errno set.
static inline osh_mqtt_connect *osh_mqtt_connect_start(
    struct mosquitto *mosq, const char *host, int port, int keepalive, uint32_t session_expiry) {
    osh_mqtt_connect *c = (osh_mqtt_connect *)calloc(1, sizeof *c);
    if (!c) return NULL;
    c->host = strdup(host);
    c->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!c->host || c->event_fd < 0) {
        int e = errno;
        if (c->event_fd >= 0) close(c->event_fd);
        free(c->host);
        free(c);
        errno = e;
        return NULL;
    }
    c->mosq = mosq;
    c->port = port;
    c->keepalive = keepalive;
    c->session_expiry = session_expiry;
    c->refs = 2;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    // Name resolution and TLS need little stack.
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t t;
    int e = pthread_create(&t, &attr, osh_mqtt_connect_thread, c);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        close(c->event_fd);
        free(c->host);
        free(c);
        errno = e;
        return NULL;
    }
    return c;
}

static inline int osh_mqtt_connect_fd(const osh_mqtt_connect *c) { return c->event_fd; }

/// After `event_fd` was readable: the connect's MOSQ_ERR_* and errno; releases the handle.
static inline int osh_mqtt_connect_finish(osh_mqtt_connect *c, int *err) {
    uint64_t v;
    ssize_t r = read(c->event_fd, &v, sizeof v);
    (void)r;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    int rc = c->rc;
    if (err) *err = c->err;
    osh_mqtt_connect_unref(c);
    return rc;
}

/// The caller gives up on a connect that may still run (a stop): the client is destroyed once the
/// thread has returned, by whichever of the two lets go last. The loop does not wait for it.
static inline void osh_mqtt_connect_abandon(osh_mqtt_connect *c) {
    __atomic_store_n(&c->abandoned, 1, __ATOMIC_RELEASE);
    osh_mqtt_connect_unref(c);
}

/// A PUBLISH at QoS `qos` with MQTT 5 properties: a content type, and correlation data when given.
static inline int osh_mqtt_publish(
    struct mosquitto *mosq, int *mid, const char *topic, const void *payload, int len, int qos,
    const char *content_type, const void *correlation, uint16_t correlation_len) {
    mosquitto_property *props = NULL;
    if (content_type) mosquitto_property_add_string(&props, MQTT_PROP_CONTENT_TYPE, content_type);
    if (correlation && correlation_len > 0) {
        mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, correlation, correlation_len);
    }
    int rc = mosquitto_publish_v5(mosq, mid, topic, len, payload, qos, false, props);
    mosquitto_property_free_all(&props);
    return rc;
}

#endif
