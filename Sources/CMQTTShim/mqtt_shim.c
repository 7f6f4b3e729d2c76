#include "mqtt_shim.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
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

// MARK: The broker's key pin

typedef struct osh_mqtt_pin {
    pthread_mutex_t lock;  // the handshake may run on the connect thread or on the loop
    char *pins;
    char presented[64];
} osh_mqtt_pin;

static int pin_index = -1;
static pthread_once_t pin_once = PTHREAD_ONCE_INIT;

static void osh_mqtt_pin_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp) {
    (void)parent;
    (void)ad;
    (void)idx;
    (void)argl;
    (void)argp;
    osh_mqtt_pin *p = (osh_mqtt_pin *)ptr;
    if (!p) return;
    pthread_mutex_destroy(&p->lock);
    free(p->pins);
    free(p);
}

// The pin state lives as long as the context: it is freed with the context's last reference,
// which may be libmosquitto's (a client destroyed after the caller let go).
static void osh_mqtt_pin_index(void) {
    pin_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, osh_mqtt_pin_free);
}

static int osh_mqtt_pin_listed(const char *pins, const char *key) {
    size_t n = strlen(key);
    const char *s = pins;
    for (;;) {
        const char *e = strchr(s, ';');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if (l == n && memcmp(s, key, n) == 0) return 1;
        if (!e) return 0;
        s = e + 1;
    }
}

// In place of the chain check: the leaf's SubjectPublicKeyInfo, hashed, must be a pinned one.
static int osh_mqtt_pin_verify(X509_STORE_CTX *store, void *arg) {
    osh_mqtt_pin *p = (osh_mqtt_pin *)arg;
    X509 *leaf = X509_STORE_CTX_get0_cert(store);
    unsigned char *der = NULL;
    int n = leaf ? i2d_X509_PUBKEY(X509_get_X509_PUBKEY(leaf), &der) : -1;
    if (n <= 0) {
        X509_STORE_CTX_set_error(store, X509_V_ERR_UNSPECIFIED);
        return 0;
    }
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(der, (size_t)n, digest);
    OPENSSL_free(der);
    char key[64] = "sha256//";
    EVP_EncodeBlock((unsigned char *)key + 8, digest, (int)sizeof digest);
    pthread_mutex_lock(&p->lock);
    memcpy(p->presented, key, sizeof key);
    int ok = osh_mqtt_pin_listed(p->pins, key);
    pthread_mutex_unlock(&p->lock);
    if (!ok) X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
    return ok;
}

void *osh_mqtt_pin_context(const char *pins) {
    pthread_once(&pin_once, osh_mqtt_pin_index);
    if (pin_index < 0 || !pins) return NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) return NULL;
    osh_mqtt_pin *p = (osh_mqtt_pin *)calloc(1, sizeof *p);
    if (p) p->pins = strdup(pins);
    if (!p || !p->pins) {
        if (p) free(p);
        SSL_CTX_free(ctx);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    if (!SSL_CTX_set_ex_data(ctx, pin_index, p)) {
        osh_mqtt_pin_free(NULL, p, NULL, 0, 0, NULL);
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_cert_verify_callback(ctx, osh_mqtt_pin_verify, p);
    return ctx;
}

int osh_mqtt_pin_attach(struct mosquitto *mosq, void *ctx) {
    int rc = mosquitto_int_option(mosq, MOSQ_OPT_SSL_CTX_WITH_DEFAULTS, 0);
    if (rc != MOSQ_ERR_SUCCESS) return rc;
    return mosquitto_void_option(mosq, MOSQ_OPT_SSL_CTX, ctx);
}

size_t osh_mqtt_pin_presented(void *ctx, char *out, size_t len) {
    if (!ctx || !out || len == 0 || pin_index < 0) return 0;
    osh_mqtt_pin *p = (osh_mqtt_pin *)SSL_CTX_get_ex_data((SSL_CTX *)ctx, pin_index);
    if (!p) return 0;
    pthread_mutex_lock(&p->lock);
    strncpy(out, p->presented, len - 1);
    out[len - 1] = 0;
    pthread_mutex_unlock(&p->lock);
    return strlen(out);
}

void osh_mqtt_pin_release(void *ctx) {
    if (ctx) SSL_CTX_free((SSL_CTX *)ctx);
}
