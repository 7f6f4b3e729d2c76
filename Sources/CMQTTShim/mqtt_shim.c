#include "mqtt_shim.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>


// libmosquitto says why a TLS handshake failed only in its log; the connect thread keeps the
// last error line in a thread-local for the caller. Lines on other threads are not kept.
static __thread char last_error[256];

static char *osh_mqtt_last_error(void) { return last_error; }

static void osh_mqtt_log_capture(struct mosquitto *mosq, void *obj, int level, const char *line) {
    (void)mosq;
    (void)obj;
    if ((level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING)) && line) {
        char *keep = osh_mqtt_last_error();
        strncpy(keep, line, 255);
        keep[255] = 0;
    }
}

void osh_mqtt_capture_errors(struct mosquitto *mosq) {
    mosquitto_log_callback_set(mosq, osh_mqtt_log_capture);
}

static void osh_mqtt_connect_unref(osh_mqtt_connect *c) {
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        if (__atomic_load_n(&c->abandoned, __ATOMIC_ACQUIRE)) mosquitto_destroy(c->mosq);
        close(c->event_fd);
        free(c->host);
        free(c);
    }
}

static void *osh_mqtt_connect_thread(void *arg) {
    osh_mqtt_connect *c = (osh_mqtt_connect *)arg;
    mosquitto_property *props = NULL;
    if (c->session_expiry > 0) {
        mosquitto_property_add_int32(&props, MQTT_PROP_SESSION_EXPIRY_INTERVAL, c->session_expiry);
    }
    errno = 0;
    osh_mqtt_last_error()[0] = 0;
    c->rc = mosquitto_connect_bind_v5(c->mosq, c->host, c->port, c->keepalive, NULL, props);
    c->err = errno;
    memcpy(c->error, osh_mqtt_last_error(), sizeof c->error);
    mosquitto_property_free_all(&props);
    uint64_t one = 1;
    ssize_t w = write(c->event_fd, &one, sizeof one);
    (void)w;
    osh_mqtt_connect_unref(c);
    return NULL;
}

osh_mqtt_connect *osh_mqtt_connect_start(
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

int osh_mqtt_connect_fd(const osh_mqtt_connect *c) { return c->event_fd; }

int osh_mqtt_connect_finish(osh_mqtt_connect *c, int *err, char *error, size_t len) {
    uint64_t v;
    ssize_t r = read(c->event_fd, &v, sizeof v);
    (void)r;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    int rc = c->rc;
    if (err) *err = c->err;
    if (error && len > 0) {
        strncpy(error, c->error, len - 1);
        error[len - 1] = 0;
    }
    osh_mqtt_connect_unref(c);
    return rc;
}

void osh_mqtt_connect_abandon(osh_mqtt_connect *c) {
    __atomic_store_n(&c->abandoned, 1, __ATOMIC_RELEASE);
    osh_mqtt_connect_unref(c);
}

int osh_mqtt_publish(
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

size_t osh_mqtt_take_error(char *error, size_t len) {
    if (!error || len == 0) return 0;
    strncpy(error, last_error, len - 1);
    error[len - 1] = 0;
    last_error[0] = 0;
    return strlen(error);
}

size_t osh_mqtt_correlation(const mosquitto_property *props, void *out, size_t len) {
    void *value = NULL;
    uint16_t n = 0;
    if (!mosquitto_property_read_binary(props, MQTT_PROP_CORRELATION_DATA, &value, &n, false) || !value) return 0;
    size_t k = n < len ? n : len;
    memcpy(out, value, k);
    free(value);
    return k;
}
